"""Which torch calls make the host wait for a device value, and (on a CPU run) which tensors count as the device's.

``sync_of`` names a call that syncs: it reads a value on the host (``.item()``,
``.tolist()``, ``.cpu()``, a tensor in an ``if``, ``np.asarray``, formatting),
returns a shape that depends on the values (``nonzero``, boolean-mask reads,
``unique``), turns a device tensor into a host number (``torch.full(size,
t)``), copies to the host (``.to("cpu")``, ``copy_`` into a host tensor: known
only where the device is not the host), or indexes a device tensor with a host
index or writes a host tensor into it (torch copies it up, blocking). A
boolean-mask write of one value with the mask on the device is ``masked_fill``
inside torch, and does not sync.

On a CPU the device is the host, so ``Places`` tells the two apart by where a
tensor came from (``HOST_MADE`` on the tensor): made without a ``device``
(``torch.linspace``, ``torch.as_tensor(array)``) or computed from such tensors
alone, it is a host tensor, as it would be on a GPU; made with ``device=``,
moved with ``.to(device)``, or computed from a device tensor, it is a device
tensor. Tensors the mode never saw made (weights and constants made before the
check; ``torch.from_numpy`` and ``torch.frombuffer``, which do not reach it)
carry no mark and count as the device's, except as the indexed side of a host
index (a host table looks the same).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import torch
from torch.overrides import resolve_name

Tensor = torch.Tensor
#: The attribute that marks where a tensor of a CPU run was made: True on the host, False on the device.
HOST_MADE = "_avatarstream_host_made"
#: Read a value on the host.
READS: frozenset[Callable[..., Any]] = frozenset(
    {
        Tensor.item,
        Tensor.tolist,
        Tensor.numpy,
        Tensor.cpu,
        Tensor.__bool__,
        Tensor.__int__,
        Tensor.__float__,
        Tensor.__index__,
        Tensor.__complex__,
        Tensor.__array__,
        Tensor.__format__,
        Tensor.__repr__,
        Tensor.__contains__,
        Tensor.is_nonzero,
        Tensor.equal,
        Tensor.allclose,
        torch.equal,
        torch.allclose,
    }
)
#: Outputs whose shape depends on the values (the host waits to learn it).
VALUE_SHAPED: frozenset[Callable[..., Any]] = frozenset(
    {
        Tensor.nonzero,
        torch.nonzero,
        torch.argwhere,
        torch.masked_select,
        Tensor.masked_select,
        torch.unique,
        Tensor.unique,
        torch.unique_consecutive,
        Tensor.unique_consecutive,
        torch.bincount,
        Tensor.bincount,
    }
)
#: Factories that turn a tensor argument into a host number.
FACTORIES: frozenset[Callable[..., Any]] = frozenset({torch.tensor, torch.arange, torch.linspace, torch.logspace, torch.full})
INDEX_READS: frozenset[Callable[..., Any]] = frozenset({Tensor.__getitem__})
INDEX_WRITES: frozenset[Callable[..., Any]] = frozenset({Tensor.__setitem__, Tensor.index_put_, Tensor.index_put})
MASKS = (torch.bool, torch.uint8)


class Places:
    """Where the tensors of a run on ``device`` live: on a GPU their device says; on a CPU their ``HOST_MADE`` mark."""

    def __init__(self, device: torch.device) -> None:
        self.device = device
        self.marks = device.type == "cpu"

    def on_device(self, tensor: Tensor) -> bool:
        """Reading ``tensor`` would make the host wait (unmarked tensors of a CPU run count)."""
        if self.marks:
            return not getattr(tensor, HOST_MADE, False)
        return tensor.device.type == self.device.type and self.device.index in (None, tensor.device.index)

    def surely_on_device(self, tensor: Tensor) -> bool:
        """``tensor`` is known to be the device's (a CPU run: marked so)."""
        return getattr(tensor, HOST_MADE, True) is False if self.marks else self.on_device(tensor)

    def on_host(self, tensor: Tensor) -> bool:
        return getattr(tensor, HOST_MADE, False) is True if self.marks else tensor.device.type == "cpu"

    def mark(self, func: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any], result: Any) -> None:
        """A CPU run: mark ``result`` host or device by where ``func`` put it, else leave it unmarked like its inputs."""
        if not self.marks:
            return
        inputs = {id(t) for t in tensors((args, kwargs))}
        if kwargs.get("device") is not None or (func is Tensor.to and target(args, kwargs) is not None):
            made: bool | None = False
            inputs = set()  # a move to the device returns its input on a CPU, a new tensor on a GPU: the device's either way
        elif func is Tensor.cpu:
            made = True
        else:
            marks = [getattr(t, HOST_MADE, None) for t in tensors((args, kwargs))]
            made = False if False in marks else None if None in marks else True
        if made is not None:
            for tensor in tensors(result):
                if id(tensor) not in inputs:  # returned as it is (in place, a no-op .cpu()): keeps its mark
                    setattr(tensor, HOST_MADE, made)

    def sync_of(self, func: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> str | None:
        """The name of ``func`` if calling it with ``args`` makes the host wait for a device value, else None."""
        return _name(func) if self._syncs(func, args, kwargs) else None

    def _syncs(self, func: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
        first = args[0] if args else None
        mine = isinstance(first, Tensor) and self.on_device(first)
        if func in READS or func in VALUE_SHAPED or func in FACTORIES:
            return any(self.on_device(t) for t in tensors((args, kwargs)))
        if func in INDEX_READS or func in INDEX_WRITES:
            return isinstance(first, Tensor) and self._index_syncs(func, first, args[1:2], args[2:3])
        if func is torch.where:
            return mine and len(args) + len(kwargs) == 1
        if func in (torch.repeat_interleave, Tensor.repeat_interleave):
            repeats = kwargs.get("repeats", args[1] if len(args) > 1 else first)
            return "output_size" not in kwargs and isinstance(repeats, Tensor) and self.on_device(repeats)
        if func is Tensor.to:
            return mine and self._to_host(target(args, kwargs))
        if func is Tensor.copy_:
            return isinstance(first, Tensor) and self._to_host(first.device) and any(self.on_device(t) for t in tensors(args[1:2]))
        return False

    def _index_syncs(self, func: Callable[..., Any], indexed: Tensor, index: tuple[Any, ...], value: tuple[Any, ...]) -> bool:
        """A host index (dim > 0) or written value of a device tensor is copied up, blocking; a device mask needs its
        positions, unless it is the only index of a one-value write (torch's ``masked_fill``)."""
        found = [t for t in tensors(index) if t.dim() > 0]
        uploads = [t for t in found if self.on_host(t)] + [t for t in tensors(value) if t.numel() > 1 and self.on_host(t)]
        if uploads and self.surely_on_device(indexed):
            return True
        masks = [t for t in found if t.dtype in MASKS and self.on_device(t)]
        if not masks or not self.on_device(indexed):
            return False
        if func in INDEX_READS:
            return True
        one_value = all(isinstance(v, int | float | bool) or (isinstance(v, Tensor) and v.numel() == 1 and self.on_host(v)) for v in value)
        return not (one_value and len(found) == 1)

    def _to_host(self, where: torch.device | None) -> bool:
        """A copy to ``where`` goes to the host (knowable only where the run's device is not the host itself)."""
        return where is not None and where.type == "cpu" and not self.marks


def target(args: tuple[Any, ...], kwargs: dict[str, Any]) -> torch.device | None:
    """Where ``Tensor.to(*args, **kwargs)`` puts its result (None: where it is)."""
    where: torch.device | None = torch._C._nn._parse_to(*args[1:], **kwargs)[0]
    return where


def tensors(value: Any) -> Iterator[Tensor]:
    """The tensors in ``value`` (nested lists, tuples, dicts)."""
    if isinstance(value, Tensor):
        yield value
    elif isinstance(value, list | tuple):
        for item in value:
            yield from tensors(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from tensors(item)


def _name(func: Callable[..., Any]) -> str:
    return (resolve_name(func) or repr(func)).removeprefix("torch.")
