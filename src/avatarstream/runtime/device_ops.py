"""The few device operations the residency policies need, in a CPU and a CUDA flavour.

Policies are written once against ``DeviceOps``. On a CPU-only build "host"
and "device" are the same memory, so buffers are plain tensors, copies are
synchronous and streams and events are ``None``: the policies still allocate
their device buffers, copy into them and repoint parameters, so their logic is
tested for real, but nothing pins memory or touches CUDA. On a GPU host
buffers are pinned, copies run on side streams and ordering uses per-buffer
events instead of whole-stream syncs.
"""

from __future__ import annotations

import threading
from typing import Any

import torch

Stream = Any  # torch.cuda.Stream on a GPU, None on CPU
Event = Any  # torch.cuda.Event on a GPU, None on CPU


class DeviceOps:
    """CPU flavour: plain memory, synchronous copies, no streams or events."""

    pins_memory = False

    def __init__(self, device: torch.device) -> None:
        self.device = device
        self.h2d_bytes = 0  # every byte a policy copied host -> device, for the report
        self._count_lock = threading.Lock()  # copies are queued from two threads when the pipeline overlaps
        self.copy_stream = self.new_stream()  # where whole-module prefetches go

    def host_buffer(self, nbytes: int) -> torch.Tensor:
        """Where weights wait between stages (pinned on a GPU, so copies can be asynchronous)."""
        with torch.inference_mode(False):  # buffers are refilled in and out of inference mode
            return torch.empty(nbytes, dtype=torch.uint8)

    def new_stream(self) -> Stream:
        return None

    def device_buffer(self, nbytes: int, stream: Stream) -> torch.Tensor:
        """A device buffer owned by ``stream`` (the stream that fills it)."""
        with torch.inference_mode(False):
            return torch.empty(nbytes, dtype=torch.uint8, device=self.device)

    def copy_in(self, dst: torch.Tensor, src: torch.Tensor, stream: Stream) -> Event:
        """Copy host ``src`` into device ``dst`` on ``stream``; returns the event that marks it done."""
        dst.copy_(src)
        self.count_h2d(src.numel() * src.element_size())
        return None

    def count_h2d(self, nbytes: int) -> None:
        with self._count_lock:
            self.h2d_bytes += nbytes

    def wait(self, event: Event) -> None:
        """Make the compute stream wait for ``event`` (not the host)."""

    def stream_wait(self, stream: Stream, event: Event) -> None:
        """Make ``stream`` wait for ``event``."""

    def compute_event(self) -> Event:
        """An event after everything queued on the compute stream so far."""
        return None

    def hand_over(self, buffer: torch.Tensor) -> None:
        """``buffer`` (filled on a side stream) is now used by the compute stream: keep it alive until that is done."""

    def take_peak_bytes(self) -> int | None:
        """Peak allocated device memory since the last call (None on CPU)."""
        return None


class CudaOps(DeviceOps):
    """CUDA flavour: pinned host buffers, side-stream copies, events."""

    pins_memory = True

    def host_buffer(self, nbytes: int) -> torch.Tensor:
        with torch.inference_mode(False):
            return torch.empty(nbytes, dtype=torch.uint8, pin_memory=True)

    def new_stream(self) -> Stream:
        return torch.cuda.Stream(self.device)

    def device_buffer(self, nbytes: int, stream: Stream) -> torch.Tensor:
        with torch.cuda.stream(stream), torch.inference_mode(False):
            return torch.empty(nbytes, dtype=torch.uint8, device=self.device)

    def copy_in(self, dst: torch.Tensor, src: torch.Tensor, stream: Stream) -> Event:
        with torch.cuda.stream(stream):
            dst.copy_(src, non_blocking=True)
            self.count_h2d(src.numel() * src.element_size())
            return stream.record_event()

    def wait(self, event: Event) -> None:
        if event is not None:
            torch.cuda.current_stream(self.device).wait_event(event)

    def stream_wait(self, stream: Stream, event: Event) -> None:
        if event is not None:
            stream.wait_event(event)

    def compute_event(self) -> Event:
        return torch.cuda.current_stream(self.device).record_event()

    def hand_over(self, buffer: torch.Tensor) -> None:
        buffer.record_stream(torch.cuda.current_stream(self.device))

    def take_peak_bytes(self) -> int | None:
        peak = int(torch.cuda.max_memory_allocated(self.device))
        torch.cuda.reset_peak_memory_stats(self.device)
        return peak


def device_ops(device: torch.device) -> DeviceOps:
    """The flavour that fits ``device``."""
    return CudaOps(device) if device.type == "cuda" else DeviceOps(device)
