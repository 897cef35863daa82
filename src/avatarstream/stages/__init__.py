"""Stages bind a model family's modules to the chunk loop (DESIGN.md §3)."""
