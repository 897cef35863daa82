"""The ``offloaded`` policy: weights wait in pinned host memory and move in on a side stream.

``DeviceCopy`` is the piece shared with the ``streamed`` policy (which uses it
for everything outside the transformer blocks): a packed group's device copy
is filled asynchronously when the module is hinted, the compute stream waits
for it only when the stage starts, and release repoints the group back to its
host views and drops the device buffer (never a device-to-host copy).
"""

from __future__ import annotations

import torch

from avatarstream.runtime.device_ops import DeviceOps, Event, Stream
from avatarstream.runtime.module import Module
from avatarstream.runtime.packing import PackedWeights, module_tensors
from avatarstream.runtime.policy import Residency


class DeviceCopy:
    """The device copy of one packed group: loaded early, bound by repointing, dropped by repointing back."""

    def __init__(self, pack: PackedWeights, ops: DeviceOps, stream: Stream) -> None:
        self.pack = pack
        self.ops = ops
        self.stream = stream
        self.buffer: torch.Tensor | None = None
        self._views: list[torch.Tensor] = []
        self._ready: Event = None
        self.bound = False

    def load(self) -> None:
        """Start the host-to-device copy (no-op when already loaded); the views are made now, off the critical path."""
        if self.buffer is None:
            self.buffer = self.ops.device_buffer(self.pack.nbytes, self.stream)
            self._ready = self.ops.copy_in(self.buffer, self.pack.host, self.stream)
            self._views = self.pack.views(self.buffer)

    def bind(self) -> None:
        """Point the group's tensors at the device copy; the compute stream waits for the copy, the host does not."""
        if self.bound:
            return
        self.load()
        assert self.buffer is not None, "load() allocates the device buffer"
        self.ops.wait(self._ready)
        self.ops.hand_over(self.buffer)
        self.pack.point_to(self._views)
        self.bound = True

    def drop(self) -> None:
        """Repoint to the host copy and let the device buffer go."""
        self.pack.point_to_host()
        self.buffer, self._views, self._ready, self.bound = None, [], None, False


class Offloaded(Residency):
    """The whole module is one packed host buffer; one asynchronous copy brings it in."""

    name = "offloaded"

    def __init__(self, module: Module, ops: DeviceOps) -> None:
        super().__init__(module, ops)
        self.copy = DeviceCopy(PackedWeights(module_tensors(module.network), ops.host_buffer), ops, ops.copy_stream)

    def prefetch(self) -> None:
        self.copy.load()

    def acquire(self) -> None:
        self.copy.bind()

    def release(self) -> None:
        self.copy.drop()

    def device_bytes(self) -> int:
        return self.copy.pack.nbytes if self.copy.buffer is not None else 0

    def close(self) -> None:
        self.copy.drop()
