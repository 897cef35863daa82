"""One session across several processes (DESIGN.md §6): sequence parallel, guidance parallel, step and stage pipelines.

``layout`` parses ``--parallel``; ``groups`` makes the process groups of a
layout; ``ulysses`` splits a DiT's tokens by frames and swaps heads for
sequence around self-attention; ``guidance`` spreads a step's predictions;
``steps`` runs one denoising step of every block per rank;
``control`` carries run commands and live audio host-side (never inside a
collective); ``stage_pipe`` moves latents to the decode rank and frames back.
"""
