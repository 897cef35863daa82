"""Build a network without memory for its weights, then fill it tensor by tensor from checkpoint shards.

Parameters are created on the meta device (buffers stay real: they are small
and often computed, such as rotary tables); each loaded tensor is assigned in
place of its meta parameter, so peak host memory is the model plus one shard.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Generic, TypeVar

import torch
from accelerate import init_empty_weights
from torch import nn

from avatarstream.errors import InputError
from avatarstream.weights.files import StateDict

N = TypeVar("N", bound=nn.Module)


def empty_weights() -> AbstractContextManager[None]:
    """Context in which new modules get meta parameters (no memory) and real buffers."""
    return init_empty_weights(include_buffers=False)


#: Bytes a CPU allocation of torch is aligned to (c10's alignment).
ALIGNMENT = 64


class MetaLoader(Generic[N]):
    """Assigns checkpoint tensors into a meta-built network and checks that every parameter was filled."""

    def __init__(self, network: N, name: str, dtype: torch.dtype, keep_fp32: Callable[[str], bool] = lambda key: False) -> None:
        self.network = network
        self.name = name
        self.dtype = dtype
        self.keep_fp32 = keep_fp32
        meta = {k: v for k, v in network.state_dict(keep_vars=True).items() if _is_meta(v)}
        self.expected = {k: tuple(v.shape) for k, v in meta.items()}
        self.floating = {k for k, v in meta.items() if v.is_floating_point()}
        self.filled: set[str] = set()

    def load(self, tensors: StateDict, source: Path) -> None:
        """Assign ``tensors`` (already in the network's key names); wrong names or shapes name ``source``."""
        self._check(tensors, source)
        integral = sorted(k for k in set(tensors) & self.floating if not tensors[k].is_floating_point())
        if integral:
            key = integral[0]
            raise InputError(
                f"{source} holds {key} as {tensors[key].dtype}, an integer type, where the {self.name} expects a floating-point "
                "weight; the file is damaged or quantized in a format avatarstream does not read: use the original download"
            )
        state = {k: _aligned(v.to(self.precision(k)) if v.is_floating_point() else v) for k, v in tensors.items()}
        self.network.load_state_dict(state, strict=False, assign=True)
        self.filled |= set(tensors)

    def precision(self, key: str) -> torch.dtype:
        """The dtype a floating-point ``key`` is held in: float32 where the network keeps it so, the loader's elsewhere."""
        return torch.float32 if self.keep_fp32(key) else self.dtype

    def assign(self, weights: Mapping[str, torch.Tensor], source: Path) -> None:
        """Set ``weights`` as they are (quantized weights, made for their ``precision``) in place of their meta parameters."""
        self._check(weights, source)
        for key, weight in weights.items():
            module, _, leaf = key.rpartition(".")
            setattr(self.network.get_submodule(module), leaf, nn.Parameter(weight, requires_grad=False))
        self.filled |= set(weights)

    def _check(self, tensors: Mapping[str, torch.Tensor], source: Path) -> None:
        unexpected = sorted(set(tensors) - set(self.expected))
        wrong = sorted(k for k in set(tensors) & set(self.expected) if tuple(tensors[k].shape) != self.expected[k])
        if unexpected or wrong:
            shapes = ", ".join(f"{k} {tuple(tensors[k].shape)} (expected {self.expected[k]})" for k in wrong[:3])
            raise InputError(
                f"{source} does not fit the {self.name}: "
                + (f"unexpected tensors {unexpected[:3]}{' ...' if len(unexpected) > 3 else ''}" if unexpected else "")
                + ("; " if unexpected and wrong else "")
                + (f"wrong shapes {shapes}" if wrong else "")
                + "; is this the right model's file, and does its config.json belong to it?"
            )

    def finish(self, sources: Iterable[Path]) -> N:
        """Check nothing is left on the meta device; returns the network in eval mode without grads."""
        missing = sorted(set(self.expected) - self.filled)
        if missing:
            where = ", ".join(str(s) for s in sources)
            raise InputError(
                f"the {self.name} weights in {where} lack {len(missing)} tensors ({', '.join(missing[:3])}{' ...' if len(missing) > 3 else ''}); "
                "the download is incomplete or belongs to another model"
            )
        return self.network.eval().requires_grad_(False)


def _aligned(tensor: torch.Tensor) -> torch.Tensor:
    """``tensor`` at an address a fresh allocation would have: a view into a file's buffer starts wherever its header ended,
    and CPU math kernels (MKL's GEMM) round differently for differently aligned operands, so the same weights read from
    two layouts, or moved by a residency policy, would give results that differ in the last bit."""
    return tensor.clone() if tensor.data_ptr() % ALIGNMENT else tensor


def _is_meta(tensor: torch.Tensor) -> bool:
    return tensor.device.type == "meta"
