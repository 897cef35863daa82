"""The few device operations the residency policies need, in a CPU and a CUDA flavour.

Policies are written once against ``DeviceOps``. On a CPU-only build "host"
and "device" are the same memory, so buffers are plain tensors, copies are
synchronous and streams and events are ``None``: the policies still allocate
their device buffers, copy into them and repoint parameters, so their logic is
tested for real, but nothing pins memory or touches CUDA. On a GPU host
buffers are pinned, copies run on side streams and ordering uses per-buffer
events instead of whole-stream syncs.

The chunk loop goes through the same seam: each worker thread (overlap,
read-ahead) runs on its own stream (``on_stream``), hand-overs between threads
are events (``compute_event`` where the work is queued, ``wait`` where it is
used), tensors that cross streams are marked for the stream that uses them
(``share``) so the caching allocator does not reuse them early, and the host
reads a device value only through ``to_host`` (frames to encode, the allowed host
read ``frames`` of ``runtime.host_reads``). Both kinds of
sync are counted: ``device_syncs`` (device-wide, never in the loop) and
``host_syncs`` (the host waits for one stream to hand it a value).
"""

from __future__ import annotations

import contextlib
import dataclasses
import threading
from collections.abc import Iterator
from typing import Any

import numpy as np
import torch

from avatarstream.runtime.allocator import release_free_memory
from avatarstream.runtime.cpu_convolution import onednn_convolutions
from avatarstream.runtime.cpu_threads import fit_threads, restore_threads
from avatarstream.runtime.host_reads import host_read

Stream = Any  # torch.cuda.Stream on a GPU, None on CPU
Event = Any  # torch.cuda.Event on a GPU, None on CPU


class DeviceOps:
    """CPU flavour: plain memory, synchronous copies, no streams or events."""

    pins_memory = False

    def __init__(self, device: torch.device) -> None:
        self.device = device
        self.h2d_bytes = 0  # every byte a policy copied host -> device, for the report
        self.device_syncs = 0  # whole-device waits (``synchronize``): none belong in the chunk loop
        self.host_syncs = 0  # device values read on the host (``to_host``): the frames the encoder needs
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

    def _count_sync(self, *, device_wide: bool) -> None:
        with self._count_lock:
            if device_wide:
                self.device_syncs += 1
            else:
                self.host_syncs += 1

    def synchronize(self) -> None:
        """Wait for every stream of the device (benchmarks' timings; never inside the chunk loop)."""
        self._count_sync(device_wide=True)

    def to_host(self, value: torch.Tensor | np.ndarray) -> np.ndarray:
        """``value`` as a host array; a tensor costs one host sync (its stream's work up to it), counted."""
        with host_read("frames"):  # every stretch passes here, a host array too: the sync checks count stretches by it
            if isinstance(value, np.ndarray):
                return value
            self._count_sync(device_wide=False)
            array: np.ndarray = value.detach().cpu().numpy()
            return array

    def on_stream(self, stream: Stream) -> contextlib.AbstractContextManager[Any]:
        """Work queued inside runs on ``stream`` (a worker thread's own); CPU: runs as is."""
        return contextlib.nullcontext()

    def share(self, value: Any, stream: Stream) -> None:
        """The tensors in ``value`` (made on another stream) are used on ``stream`` too: not reused before it is done with them."""

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

    def release_host_memory(self) -> None:
        """Give freed host memory back to the system (a CPU run's chunk buffers; rate-limited, see ``allocator``)."""
        release_free_memory()

    def between_chunks(self) -> None:
        """The host's upkeep after each chunk: what the chunk freed leaves RSS now (whichever thread's arena holds it),
        and the thread count follows the machine's load."""
        self.release_host_memory()
        self.fit_threads()

    def choose_kernels(self, network: torch.nn.Module) -> None:
        """When a network joins a run: the CPU kernels torch would not pick itself (video convolutions through oneDNN, ``cpu_convolution``)."""
        onednn_convolutions(network)

    def fit_threads(self) -> None:
        """At a chunk boundary, on a thread that runs operators: its CPU thread count for the machine's load (``cpu_threads``)."""
        fit_threads()

    def restore_threads(self) -> None:
        """At the end of a run: the thread count it started with (``cpu_threads``)."""
        restore_threads()


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

    def synchronize(self) -> None:
        super().synchronize()
        torch.cuda.synchronize(self.device)

    def on_stream(self, stream: Stream) -> contextlib.AbstractContextManager[Any]:
        return torch.cuda.stream(stream)

    def share(self, value: Any, stream: Stream) -> None:
        target = stream if stream is not None else torch.cuda.current_stream(self.device)
        for tensor in tensors_in(value):
            if tensor.is_cuda:
                tensor.record_stream(target)

    def release_host_memory(self) -> None:
        """Nothing: a GPU run's chunk buffers live in the device allocator, and a trim per chunk would only cost time."""

    def choose_kernels(self, network: torch.nn.Module) -> None:
        """Nothing: cuDNN picks its own algorithms."""

    def fit_threads(self) -> None:
        """Nothing: a GPU run's operators run on the device, and a look at the CPU load per block would only cost time."""

    def restore_threads(self) -> None:
        """Nothing: ``fit_threads`` changed nothing."""

    def take_peak_bytes(self) -> int | None:
        peak = int(torch.cuda.max_memory_allocated(self.device))
        torch.cuda.reset_peak_memory_stats(self.device)
        return peak


def tensors_in(value: Any) -> Iterator[torch.Tensor]:
    """Every tensor in ``value`` (nested dicts, lists, tuples and dataclasses)."""
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from tensors_in(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from tensors_in(item)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for item in dataclasses.fields(value):
            yield from tensors_in(getattr(value, item.name))


def device_ops(device: torch.device) -> DeviceOps:
    """The flavour that fits ``device``."""
    return CudaOps(device) if device.type == "cuda" else DeviceOps(device)
