"""The block-causal DiT's memory: one rolling KV cache per denoising step, and one attention sink they share.

A step cache holds, per layer, the keys (already rotated at their absolute
positions) and values of the last ``cache_blocks`` blocks the step saw: block
k is written over block k - cache_blocks. The sink holds the keys (not
rotated: their positions move with the stream) and values of the reference
frame and the FramePack motion tokens, computed once by the sink prefill.
Both are fixed-size tensors: memory does not grow with the stream.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from avatarstream.models.liveavatar.rope import Positions


@dataclass
class StepCache:
    """Keys and values [layers, B, rows, heads, head_dim]; ``filled`` rows are valid, the next block goes at ``next_row``."""

    k: torch.Tensor
    v: torch.Tensor
    filled: int = 0
    next_row: int = 0

    @classmethod
    def empty(cls, layers: int, batch: int, rows: int, heads: int, head_dim: int, dtype: torch.dtype, device: torch.device) -> StepCache:
        shape = (layers, batch, rows, heads, head_dim)
        return cls(torch.zeros(shape, dtype=dtype, device=device), torch.zeros(shape, dtype=dtype, device=device))

    @property
    def rows(self) -> int:
        return int(self.k.shape[2])

    def write(self, layer: int, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Store a block's keys/values at ``next_row``; returns the layer's valid keys and values (this block included)."""
        end = self.next_row + k.shape[1]
        if k.shape[2:] != self.k.shape[3:]:  # (heads, head_dim): a process's share of the heads must match its cache's
            raise ValueError(f"keys of shape {tuple(k.shape[2:])} (heads, head_dim) do not fit a cache of {tuple(self.k.shape[3:])}")
        if end > self.rows:
            raise ValueError(f"a block of {k.shape[1]} tokens does not fit the cache's {self.rows} rows at row {self.next_row}")
        self.k[layer, :, self.next_row : end] = k
        self.v[layer, :, self.next_row : end] = v
        valid = max(self.filled, end)
        return self.k[layer, :, :valid], self.v[layer, :, :valid]

    def advance(self, tokens: int) -> None:
        """After every layer wrote a block of ``tokens``: move the ring's write position on."""
        self.filled = max(self.filled, self.next_row + tokens)
        self.next_row = (self.next_row + tokens) % self.rows

    def nbytes(self) -> int:
        return 2 * self.k.numel() * self.k.element_size()


@dataclass
class SinkCache:
    """Un-rotated keys and values [layers, B, tokens, heads, head_dim] of the reference frame and motion tokens."""

    k: torch.Tensor
    v: torch.Tensor
    reference: Positions  # the reference frame's positions before any roll-out
    motion: Positions

    def nbytes(self) -> int:
        return 2 * self.k.numel() * self.k.element_size()
