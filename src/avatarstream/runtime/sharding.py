"""The ``sharded`` policy: FSDP2 across the processes of a node (one per GPU).

Each transformer block and the root are wrapped with ``fully_shard``; every
unit reshards after its forward, so only one or two blocks are ever gathered,
and each block asks FSDP to prefetch the next block's all-gather while it
computes. Options (``sharded:offload+bf16``): ``offload`` keeps the shards in
host memory (``CPUOffloadPolicy``), ``bf16``/``fp16`` gather and compute in
that dtype (``MixedPrecisionPolicy``; outputs stay float32). On a CPU build
the mesh is a gloo mesh and the shards always live in plain host memory
(``CPUOffloadPolicy(pin_memory=False)``).

Every rank of the shard group must run the same forwards in the same order:
without ``--parallel`` that is every rank (each runs the whole pipeline, rank 0
publishes); with a layout it is the sequence-parallel group.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from itertools import pairwise
from typing import TYPE_CHECKING, Any

import torch
import torch.distributed as dist
from torch import nn
from torch.utils._python_dispatch import is_traceable_wrapper_subclass

from avatarstream.errors import InputError
from avatarstream.runtime.device_ops import DeviceOps
from avatarstream.runtime.module import Module
from avatarstream.runtime.policy import Residency
from avatarstream.runtime.streamed import blocks_of

if TYPE_CHECKING:
    from torch.distributed.fsdp import FSDPModule, UnshardHandle

    from avatarstream.runtime.parallel.groups import ParallelGroups

PARAM_DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}
_sharded: weakref.WeakSet[nn.Module] = weakref.WeakSet()  # networks fully_shard has changed for good


def is_sharded(network: nn.Module) -> bool:
    return network in _sharded


def shard_network(
    network: nn.Module,
    device: torch.device,
    *,
    offload: bool = False,
    pin_memory: bool = False,
    param_dtype: torch.dtype | None = None,
    group: dist.ProcessGroup | None = None,
) -> list[nn.Module]:
    """Apply FSDP2 per block of ``network.blocks`` and at the root; returns the FSDP units in forward order.

    Shards over ``group`` (default: every process). Needs an initialized process group.
    """
    # imported here: FSDP costs ~0.6 s of import time that runs without sharding never pay
    from torch.distributed.device_mesh import DeviceMesh
    from torch.distributed.fsdp import (
        CPUOffloadPolicy,
        MixedPrecisionPolicy,
        OffloadPolicy,
        fully_shard,
    )

    blocks = blocks_of(network)
    if blocks is None:
        raise InputError("a network sharded per block needs 'blocks' (an nn.ModuleList)")
    group = group if group is not None else dist.group.WORLD
    assert group is not None, "sharding needs an initialized process group"
    mesh = DeviceMesh.from_group(group, device.type)
    settings: dict[str, Any] = {
        "mesh": mesh,
        "reshard_after_forward": True,
        "mp_policy": MixedPrecisionPolicy(param_dtype=param_dtype, output_dtype=torch.float32 if param_dtype else None),
        "offload_policy": CPUOffloadPolicy(pin_memory=pin_memory) if offload else OffloadPolicy(),
    }
    sharded_blocks = [fully_shard(block, **settings) for block in blocks]
    for unit, following in pairwise([fully_shard(network, **settings), *sharded_blocks]):
        unit.set_modules_to_forward_prefetch([following])
    _sharded.add(network)
    return [network, *blocks]


def local_bytes(module: nn.Module) -> int:
    """Bytes of this rank's shards of ``module``'s parameters (plain tensors count whole)."""
    tensors = [p.to_local() if hasattr(p, "to_local") else p for p in module.parameters()]
    return sum(t.numel() * t.element_size() for t in tensors)


class Sharded(Residency):
    """FSDP2 gathers each block just before it runs and frees it right after."""

    name = "sharded"
    sequential_only = True  # every rank must issue the collectives of all sharded modules in the same order

    @classmethod
    def options(cls, text: str) -> dict[str, Any]:
        options: dict[str, Any] = {}
        for word in filter(None, text.split("+")):
            if word == "offload":
                options["offload"] = True
            elif word in PARAM_DTYPES:
                options["param_dtype"] = PARAM_DTYPES[word]
            else:
                raise InputError(f"unknown sharded option {word!r}; use offload and/or {' or '.join(PARAM_DTYPES)}, joined by '+' (e.g. sharded:offload+bf16)")
        return options

    @classmethod
    def create(cls, module: Module, ops: DeviceOps, parallel: ParallelGroups, **options: Any) -> Sharded:
        return cls(module, ops, group=parallel.shard_group, **options)  # inside the sequence-parallel group when a layout splits the session

    def __init__(
        self, module: Module, ops: DeviceOps, offload: bool = False, param_dtype: torch.dtype | None = None, group: dist.ProcessGroup | None = None
    ) -> None:
        """``group``: the processes the weights are sharded over (None: every process)."""
        super().__init__(module, ops)
        if not (dist.is_available() and dist.is_initialized()):
            raise InputError(f"module {module.name!r} is set to sharded, which needs one process per GPU: launch with --nproc N (or torchrun)")
        network = module.network
        blocks = blocks_of(network)
        if blocks is None:
            raise InputError(f"module {module.name!r} cannot be sharded per block: it has no 'blocks' (an nn.ModuleList)")
        quantized = next(((name, p) for name, p in network.named_parameters() if is_traceable_wrapper_subclass(p)), None)
        if quantized is not None:
            raise InputError(
                f"module {module.name!r} holds quantized weights ({quantized[0]} is a {type(quantized[1]).__name__}), which FSDP2 "
                "cannot shard (torchao's int8 and fp8 tensors have no split or all-gather): load it unquantized to shard it, or choose resident, "
                "offloaded or streamed for it"
            )
        self.offload = offload or ops.device.type == "cpu"
        if not is_sharded(network):  # one taken over from an earlier runtime keeps the sharding it has
            shard_network(network, ops.device, offload=self.offload, pin_memory=ops.pins_memory, param_dtype=param_dtype, group=group)
        from torch.distributed.fsdp import FSDPModule  # already imported by shard_network (now or for an earlier runtime)

        assert isinstance(network, FSDPModule), "fully_shard turns the network into an FSDPModule"
        self._root: FSDPModule = network
        self._shard_bytes = local_bytes(network)
        self._pending: UnshardHandle | None = None
        self._hooks = []
        if self.offload and ops.device.type == "cuda":
            # FSDP copies each unit's host shards in before gathering it; count them with the policies' own copies
            own = {block: local_bytes(block) for block in blocks}
            own[network] = self._shard_bytes - sum(own.values())
            self._hooks = [unit.register_forward_pre_hook(_counter(ops, nbytes)) for unit, nbytes in own.items()]

    def prefetch(self) -> None:
        """Start gathering the root's parameters; FSDP's pre-forward waits for it, and each block prefetches the next."""
        if self._pending is None:
            self._pending = self._root.unshard(async_op=True)

    def acquire(self) -> None:
        """Nothing to do up front: FSDP's own pre-forward hooks gather each unit when it runs."""

    def release(self) -> None:
        if self._pending is not None:
            self._pending.wait()
            self._pending = None
        self._root.reshard()

    def device_bytes(self) -> int:
        return 0 if self.offload else self._shard_bytes

    def close(self) -> None:
        """Sharding cannot be undone; leave the module resharded."""
        self.release()
        for hook in self._hooks:
            hook.remove()


def _counter(ops: DeviceOps, nbytes: int) -> Callable[[nn.Module, tuple[Any, ...]], None]:
    """A forward pre-hook adding ``nbytes`` to the host-to-device counter."""

    def count(_module: nn.Module, _args: tuple[Any, ...]) -> None:
        ops.count_h2d(nbytes)

    return count
