"""One contiguous host buffer per group of weights (a whole module, or one transformer block).

Packing makes moving a group one host-to-device copy instead of hundreds of
small ones, and makes releasing it free: the group's parameters and buffers
are repointed (``tensor.data = view``) to views of the host buffer or of a
device buffer laid out the same way. Nothing is ever copied device-to-host.

A quantized weight (a tensor subclass such as torchao's int8 and fp8 tensors)
is packed as the plain tensors it holds (its int8 or fp8 data and its scales),
so it moves in its own few bytes. Setting ``.data`` cannot repoint such a
wrapper (its inner tensors are Python attributes, and its device is its own),
so it is rebuilt around the new views and swapped in place
(``torch.utils.swap_tensors``, as ``nn.Module.to`` moves one): the module's
parameter stays the same Python object.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

import torch
from torch import nn
from torch.utils._python_dispatch import is_traceable_wrapper_subclass

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


def plain_tensors(t: torch.Tensor) -> list[torch.Tensor]:
    """The plain tensors that hold ``t``'s values: ``t`` itself, or a tensor subclass's inner tensors (recursively)."""
    if not is_traceable_wrapper_subclass(t):
        return [t]
    names, _ = t.__tensor_flatten__()
    return [plain for name in names for plain in plain_tensors(getattr(t, name))]


def held_bytes(t: torch.Tensor) -> int:
    """Bytes ``t`` holds: a quantized weight's data and scales, not its logical size."""
    return sum(plain.numel() * plain.element_size() for plain in plain_tensors(t))


def _rebuilt(t: torch.Tensor, views: Iterator[torch.Tensor]) -> torch.Tensor:
    """``t`` (a tensor subclass) around the next of ``views`` in ``plain_tensors`` order."""
    if not is_traceable_wrapper_subclass(t):
        return next(views)
    names, context = t.__tensor_flatten__()
    inner = {name: _rebuilt(getattr(t, name), views) for name in names}
    return type(t).__tensor_unflatten__(inner, context, t.size(), t.stride())


class PackedWeights:
    """A group of tensors living in views of one contiguous (pinned, on a GPU) host buffer."""

    def __init__(self, tensors: list[torch.Tensor], host_buffer: Callable[[int], torch.Tensor]) -> None:
        """``host_buffer(nbytes)`` allocates the host memory (``DeviceOps.host_buffer``)."""
        self.tensors = tensors
        self._parts = [len(plain_tensors(t)) if is_traceable_wrapper_subclass(t) else 0 for t in tensors]  # 0: a plain tensor
        plain = [p for t in tensors for p in plain_tensors(t)]
        self.layout: Layout = tuple((tuple(t.shape), t.dtype) for t in plain)
        self._offsets: list[int] = []
        end = 0
        for t in plain:
            self._offsets.append(end)
            end = _aligned(end + t.numel() * t.element_size())
        self.nbytes = end
        self.host = host_buffer(end)
        self.host_views = self.views(self.host)
        with torch.no_grad():
            for view, t in zip(self.host_views, plain, strict=True):
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
        if not any(self._parts):
            for t, view in zip(self.tensors, views, strict=True):
                t.data = view
            return
        remaining = iter(views)
        for t, parts in zip(self.tensors, self._parts, strict=True):
            if parts:
                _swap_in(t, _rebuilt(t, iter([next(remaining) for _ in range(parts)])))
            else:
                t.data = next(remaining)

    def point_to_host(self) -> None:
        self.point_to(self.host_views)


def _swap_in(t: torch.Tensor, rebuilt: torch.Tensor) -> None:
    """Make ``t`` (the object its module holds) the rebuilt tensor subclass, a parameter still when it was one."""
    with torch.inference_mode(False):
        new = nn.Parameter(rebuilt, requires_grad=False) if isinstance(t, nn.Parameter) else rebuilt
        torch.utils.swap_tensors(t, new)  # type: ignore[no-untyped-call]


def _nbytes(shape: tuple[int, ...], dtype: torch.dtype) -> int:
    numel = 1
    for n in shape:
        numel *= n
    return numel * dtype.itemsize


def _aligned(n: int) -> int:
    return -(-n // ALIGN) * ALIGN
