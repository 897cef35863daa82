"""Benchmark scenarios behind ``avatarstream bench`` (JSON results plus PNG plots)."""
