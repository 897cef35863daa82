"""The ``streamed`` policy: a transformer's blocks pass through a fixed number of device slots.

Only ``slots`` blocks are ever on the device. Each block's weights sit in one
contiguous pinned host buffer; a forward pre-hook on block *i* makes the
compute stream wait for block *i*'s slot event and queues the copies of the
next ``slots - 1`` blocks on the policy's own stream, so block *i+1*'s copy
overlaps block *i*'s compute. After the last block the look-ahead wraps around
to block 0, ready for the next denoising step. A slot is refilled only after
the compute that used its previous block is done (a per-slot event, never a
whole-stream sync). Everything outside the blocks (embeddings, head) moves
like the ``offloaded`` policy.

Blocks get their own copy stream so that a whole-module prefetch for the next
stage, queued on the runtime's copy stream, never sits in front of the next
block's copy.
"""

from __future__ import annotations

from collections import OrderedDict
from functools import partial
from typing import Any

import torch
from torch import nn

from avatarstream.errors import InputError
from avatarstream.runtime.device_ops import DeviceOps, Event
from avatarstream.runtime.module import Module
from avatarstream.runtime.offload import DeviceCopy
from avatarstream.runtime.packing import Layout, PackedWeights, module_tensors
from avatarstream.runtime.policy import Residency

DEFAULT_SLOTS = 2


def blocks_of(network: nn.Module) -> nn.ModuleList | None:
    """``network.blocks`` when it is an nn.ModuleList (the transformer blocks the streamed and sharded policies work per), else None."""
    blocks = getattr(network, "blocks", None)
    return blocks if isinstance(blocks, nn.ModuleList) else None


def has_blocks(network: nn.Module) -> bool:
    """Whether ``network`` has what the streamed policy streams: a non-empty ``blocks`` ModuleList."""
    blocks = blocks_of(network)
    return blocks is not None and len(blocks) > 0


class Streamed(Residency):
    """Blocks of ``network.blocks`` streamed through ``slots`` preallocated device buffers."""

    name = "streamed"

    @classmethod
    def options(cls, text: str) -> dict[str, Any]:
        if not text:
            return {}
        if not text.isdigit() or int(text) < 1:
            raise InputError(f"streamed slots must be a whole number >= 1, got {text!r} (e.g. streamed:2)")
        return {"slots": int(text)}

    def __init__(self, module: Module, ops: DeviceOps, slots: int = DEFAULT_SLOTS) -> None:
        super().__init__(module, ops)
        blocks = blocks_of(module.network) if has_blocks(module.network) else None
        if blocks is None:
            raise InputError(
                f"module {module.name!r} cannot be streamed: it has no 'blocks' (an nn.ModuleList of transformer blocks); use resident or offloaded for it"
            )
        self.blocks = [PackedWeights(module_tensors(block), ops.host_buffer) for block in blocks]
        self.rest = DeviceCopy(PackedWeights(module_tensors(module.network, skip=blocks), ops.host_buffer), ops, ops.copy_stream)
        self.num_slots = min(slots, len(self.blocks))
        self.slot_bytes = max(pack.nbytes for pack in self.blocks)
        self.stream = ops.new_stream()
        self.slots: list[torch.Tensor] = []  # empty while released
        self._resident: OrderedDict[int, int] = OrderedDict()  # block -> slot, least recently used first
        self._ready: list[Event] = []
        self._free: list[Event] = []
        self._views: dict[tuple[int, Layout], list[torch.Tensor]] = {}
        self._active = False
        self._hooks = []
        for i, block in enumerate(blocks):
            self._hooks.append(block.register_forward_pre_hook(partial(self._before_block, i)))
            self._hooks.append(block.register_forward_hook(partial(self._after_block, i)))

    def prefetch(self) -> None:
        """Allocate the slots and start copying the first blocks and the rest of the module."""
        self.rest.load()
        if not self.slots:
            self.slots = [self.ops.device_buffer(self.slot_bytes, self.stream) for _ in range(self.num_slots)]
            self._ready = [None] * self.num_slots
            self._free = [None] * self.num_slots
            for block in range(self.num_slots):
                self._load(block)

    def acquire(self) -> None:
        if self._active:
            return
        self.prefetch()
        self.rest.bind()
        for slot in self.slots:
            self.ops.hand_over(slot)
        self._active = True

    def release(self) -> None:
        """Every block back to its host buffer; the slots are freed."""
        self._active = False
        for block in self._resident:
            self.blocks[block].point_to_host()
        self._resident.clear()
        self.slots, self._ready, self._free = [], [], []
        self._views.clear()
        self.rest.drop()

    def device_bytes(self) -> int:
        return (self.rest.pack.nbytes if self.rest.buffer is not None else 0) + len(self.slots) * self.slot_bytes

    def close(self) -> None:
        self.release()
        for hook in self._hooks:
            hook.remove()

    # -- hooks ----------------------------------------------------------------------------------

    def _before_block(self, index: int, _block: nn.Module, _args: tuple[Any, ...]) -> None:
        if not self._active:
            return
        self.ops.wait(self._ready[self._ensure(index)])
        for ahead in range(1, self.num_slots):
            self._ensure((index + ahead) % len(self.blocks))

    def _after_block(self, index: int, _block: nn.Module, _args: tuple[Any, ...], _output: Any) -> None:
        if self._active:
            self._free[self._resident[index]] = self.ops.compute_event()

    # -- slots ----------------------------------------------------------------------------------

    def _ensure(self, block: int) -> int:
        """The slot holding ``block``, loading it into the least recently used slot if needed."""
        slot = self._resident.get(block)
        if slot is None:
            return self._load(block)
        self._resident.move_to_end(block)
        return slot

    def _load(self, block: int) -> int:
        if len(self._resident) < len(self.slots):
            slot = len(self._resident)
        else:
            evicted, slot = self._resident.popitem(last=False)
            self.blocks[evicted].point_to_host()
        pack = self.blocks[block]
        self.ops.stream_wait(self.stream, self._free[slot])  # the slot's previous block is done computing
        self._ready[slot] = self.ops.copy_in(self.slots[slot][: pack.nbytes], pack.host, self.stream)
        key = (slot, pack.layout)
        if key not in self._views:
            self._views[key] = pack.views(self.slots[slot])
        pack.point_to(self._views[key])
        self._resident[block] = slot
        return slot
