"""The settings a FlashVSR stream runs with (no torch here: the upscaler's options make them before any model loads)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class StreamSettings:
    """``FlashVSRStream``'s tuning, every one set: the attention's sparsity and window, the KV cache's slabs, the colour fix."""

    sparse_ratio: float
    local_range: int
    kv_ratio: int
    color_fix: bool
