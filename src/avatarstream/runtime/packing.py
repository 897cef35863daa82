"""One contiguous host buffer per group of weights (a whole module, or one transformer block).

Packing makes moving a group one host-to-device copy instead of hundreds of
small ones, and makes releasing it free: the group's parameters and buffers
are repointed (``tensor.data = view``) to views of the host buffer or of a
device buffer laid out the same way. Nothing is ever copied device-to-host.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import torch
from torch import nn

ALIGN = 256
"""Byte alignment of every tensor inside a pack (keeps views valid for any dtype and friendly to kernels)."""

Layout = tuple[tuple[tuple[int, ...], torch.dtype], ...]


def module_tensors(module: nn.Module, skip: nn.Module | None = None) -> list[torch.Tensor]:
    """Parameters and buffers of ``module`` (each once), leaving out everything inside ``skip``."""
    skipped = {id(t) for t in _all_tensors(skip)} if skip is not None else set()
    seen: set[int] = set()
    tensors = []
    for t in _all_tensors(module):
        if id(t) not in skipped and id(t) not in seen:
            seen.add(id(t))
            tensors.append(t)
    return tensors


def _all_tensors(module: nn.Module) -> Iterable[torch.Tensor]:
    yield from module.parameters()
    yield from module.buffers()


class PackedWeights:
    """A group of tensors living in views of one contiguous (pinned, on a GPU) host buffer."""

    def __init__(self, tensors: list[torch.Tensor], host_buffer: Callable[[int], torch.Tensor]) -> None:
        """``host_buffer(nbytes)`` allocates the host memory (``DeviceOps.host_buffer``)."""
        self.tensors = tensors
        self.layout: Layout = tuple((tuple(t.shape), t.dtype) for t in tensors)
        self._offsets: list[int] = []
        end = 0
        for t in tensors:
            self._offsets.append(end)
            end = _aligned(end + t.numel() * t.element_size())
        self.nbytes = end
        self.host = host_buffer(end)
        self.host_views = self.views(self.host)
        with torch.no_grad():
            for view, t in zip(self.host_views, tensors, strict=True):
                view.copy_(t)
        self.point_to(self.host_views)

    def views(self, buffer: torch.Tensor) -> list[torch.Tensor]:
        """The group's tensors as views of ``buffer`` (a uint8 buffer of at least ``nbytes``)."""
        with torch.inference_mode(False):
            return [
                buffer[offset : offset + _nbytes(shape, dtype)].view(dtype).view(shape)
                for offset, (shape, dtype) in zip(self._offsets, self.layout, strict=True)
            ]

    def point_to(self, views: list[torch.Tensor]) -> None:
        """Repoint every tensor of the group to ``views`` (no copy)."""
        for t, view in zip(self.tensors, views, strict=True):
            t.data = view

    def point_to_host(self) -> None:
        self.point_to(self.host_views)


def _nbytes(shape: tuple[int, ...], dtype: torch.dtype) -> int:
    numel = 1
    for n in shape:
        numel *= n
    return numel * dtype.itemsize


def _aligned(n: int) -> int:
    return -(-n // ALIGN) * ALIGN
