"""The block-causal DiT's memory: one rolling KV cache per denoising step, and one attention sink they share.

A step cache holds, per layer, the keys (already rotated at their absolute
positions) and values of the last ``cache_blocks`` blocks the step saw: block
k is written over block k - cache_blocks. The sink holds the keys (not
rotated: their positions move with the stream) and values of the reference
frame and the FramePack motion tokens, computed once by the sink prefill.
Both are fixed-size tensors: memory does not grow with the stream. Either may
be stored in another dtype than the model computes in, or in fp8 with a scale
per token and head (``components/kv_storage.py``); reads give the compute dtype.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from avatarstream.components import kv_storage
from avatarstream.models.liveavatar.rope import Positions


@dataclass
class StepCache:
    """Keys and values [layers, B, rows, heads, head_dim]; ``filled`` rows are valid, the next block goes at ``next_row``.

    ``k_scale``/``v_scale`` [layers, B, rows, heads, 1]: the scales of fp8 storage (None otherwise); ``dtype``: what
    reads give (None: the storage's own)."""

    k: torch.Tensor
    v: torch.Tensor
    filled: int = 0
    next_row: int = 0
    k_scale: torch.Tensor | None = None
    v_scale: torch.Tensor | None = None
    dtype: torch.dtype | None = None

    @classmethod
    def empty(
        cls, layers: int, batch: int, rows: int, heads: int, head_dim: int, dtype: torch.dtype, device: torch.device, storage: torch.dtype | None = None
    ) -> StepCache:
        """Zeroed caches for values computed in ``dtype``, stored in ``storage`` (None: ``dtype``; ``float8_e4m3fn``: fp8 with scales)."""
        shape = (layers, batch, rows, heads, head_dim)
        k, k_scale = kv_storage.empty(shape, dtype, storage, device)
        v, v_scale = kv_storage.empty(shape, dtype, storage, device)
        return cls(k, v, k_scale=k_scale, v_scale=v_scale, dtype=dtype)

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
        block = (layer, slice(None), slice(self.next_row, end))
        kv_storage.put(self.k, self.k_scale, block, k)
        kv_storage.put(self.v, self.v_scale, block, v)
        valid = (layer, slice(None), slice(None, max(self.filled, end)))
        dtype = self.dtype or self.k.dtype
        return kv_storage.get(self.k, self.k_scale, valid, dtype), kv_storage.get(self.v, self.v_scale, valid, dtype)

    def advance(self, tokens: int) -> None:
        """After every layer wrote a block of ``tokens``: move the ring's write position on."""
        self.filled = max(self.filled, self.next_row + tokens)
        self.next_row = (self.next_row + tokens) % self.rows

    def nbytes(self) -> int:
        return kv_storage.nbytes(self.k, self.v, self.k_scale, self.v_scale)


@dataclass
class SinkCache:
    """Un-rotated keys and values [layers, B, tokens, heads, head_dim] of the reference frame and motion tokens (stored
    as ``StepCache`` stores them)."""

    k: torch.Tensor
    v: torch.Tensor
    reference: Positions  # the reference frame's positions before any roll-out
    motion: Positions
    k_scale: torch.Tensor | None = None
    v_scale: torch.Tensor | None = None
    dtype: torch.dtype | None = None

    @classmethod
    def empty(
        cls, shape: tuple[int, ...], dtype: torch.dtype, device: torch.device, reference: Positions, motion: Positions, storage: torch.dtype | None = None
    ) -> SinkCache:
        k, k_scale = kv_storage.empty(shape, dtype, storage, device)
        v, v_scale = kv_storage.empty(shape, dtype, storage, device)
        return cls(k, v, reference, motion, k_scale, v_scale, dtype)

    def store(self, layer: int, k: torch.Tensor, v: torch.Tensor) -> None:
        kv_storage.put(self.k, self.k_scale, (layer,), k)
        kv_storage.put(self.v, self.v_scale, (layer,), v)

    def keys(self, layer: int) -> torch.Tensor:
        return kv_storage.get(self.k, self.k_scale, (layer,), self.dtype or self.k.dtype)

    def values(self, layer: int) -> torch.Tensor:
        return kv_storage.get(self.v, self.v_scale, (layer,), self.dtype or self.v.dtype)

    def keep_heads(self, local: Callable[[torch.Tensor], torch.Tensor]) -> None:
        """Keep this process's heads alone (``local`` cuts [..., heads, d] to them; scales are cut the same way)."""
        self.k, self.v = local(self.k), local(self.v)
        if self.k_scale is not None and self.v_scale is not None:
            self.k_scale, self.v_scale = local(self.k_scale), local(self.v_scale)

    def nbytes(self) -> int:
        return kv_storage.nbytes(self.k, self.v, self.k_scale, self.v_scale)
