"""How keys and values are stored in a model's KV caches: as computed, in another float dtype, or in fp8.

Shared by every model that keeps a KV cache: LiveAvatar's rolling step caches
and sink (tensors allocated once and written in place: ``empty``, ``put``,
``get``) and FlashVSR's slab cache (which grows by a call's keys and drops its
oldest slab: ``stored``, ``read``).

fp8 is e4m3 (``float8_e4m3fn``) with one float32 scale per token and head:
each head's vector of ``head_dim`` values is divided by its largest magnitude
over 448 (e4m3's largest), so every vector uses the format's whole range. A
cache then holds 1 byte per value plus 4 per token and head (1.03 bytes per
value at the real head size of 128, against 2 in bf16). Values are
dequantized to the compute dtype when a layer reads them; only that layer's
share is ever held at full precision, for the length of its attention.

The default stores what the model computes, in its dtype: writes and reads
are plain indexing, exactly as before this choice existed.
"""

from __future__ import annotations

import torch

FP8 = torch.float8_e4m3fn
#: e4m3's largest finite value.
FP8_MAX = torch.finfo(FP8).max
#: A scale never below this, so that an all-zero vector (an empty cache row) stays zero.
SMALLEST_SCALE = 1e-12
#: What a KV cache dtype option may name: a float dtype, or fp8.
NAMED = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16, "fp8": FP8}


def named(name: str | None) -> torch.dtype | None:
    """A KV cache dtype option's value (``fp8``, ``bf16`` ...) as the dtype to store in; None: as computed."""
    return None if name is None else NAMED[name]


def empty(shape: tuple[int, ...], dtype: torch.dtype, storage: torch.dtype | None, device: torch.device) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Zeroed storage for values of ``dtype`` [..., heads, head_dim], and the fp8 scales [..., heads, 1] (None otherwise)."""
    stored = storage or dtype
    data = torch.zeros(shape, dtype=stored, device=device)
    return data, torch.zeros((*shape[:-1], 1), dtype=torch.float32, device=device) if stored == FP8 else None


def put(data: torch.Tensor, scale: torch.Tensor | None, index: tuple[int | slice, ...], values: torch.Tensor) -> None:
    """Store ``values`` at ``data[index]`` (and their scales at ``scale[index]`` in fp8)."""
    if scale is None:
        data[index] = values
        return
    data[index], scale[index] = _fp8(values)


def get(data: torch.Tensor, scale: torch.Tensor | None, index: tuple[int | slice, ...], dtype: torch.dtype) -> torch.Tensor:
    """``data[index]`` in ``dtype``: a view when stored as computed, a dequantized copy otherwise."""
    return read(data[index], None if scale is None else scale[index], dtype)


def stored(values: torch.Tensor, storage: torch.dtype | None) -> tuple[torch.Tensor, torch.Tensor | None]:
    """``values`` [..., heads, head_dim] as ``storage`` holds them (None: ``values`` themselves), and their fp8 scales
    [..., heads, 1] (None unless fp8)."""
    if storage == FP8:
        return _fp8(values)
    return (values if storage is None else values.to(storage)), None


def read(data: torch.Tensor, scale: torch.Tensor | None, dtype: torch.dtype) -> torch.Tensor:
    """Stored values in ``dtype``: ``data`` itself when stored as computed, a dequantized copy otherwise."""
    if scale is None:
        return data.to(dtype)
    return (data.float() * scale).to(dtype)


def _fp8(values: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """e4m3 values and their float32 scale per vector of the last dimension."""
    amax = values.abs().amax(dim=-1, keepdim=True).float()
    step = (amax / FP8_MAX).clamp(min=SMALLEST_SCALE)
    return (values.float() / step).to(FP8), step


def nbytes(*tensors: torch.Tensor | None) -> int:
    return sum(t.numel() * t.element_size() for t in tensors if t is not None)
