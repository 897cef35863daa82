"""Work on a thread of its own, each with its own device stream: finish chunk k while chunk k+1 generates, read ahead.

``StreamWorker`` runs callables on one worker thread, in submission order, on
its own stream. A hand-over is a pair of events, never a device-wide sync: the
worker's stream waits for an event recorded where the work was submitted (so
it sees everything queued before), and whoever takes the result waits for an
event recorded after the work (``take``). Tensors that cross streams are marked
for the stream that uses them, so the caching allocator does not hand their
memory to other work while that stream still reads it. On CPU streams and
events are ``None`` and the thread alone gives the overlap (torch releases the
GIL inside kernels).

``FinalizeWorker`` runs the final stages that way: in submission order, so the
VAE's causal cache sees frames in timeline order and the output is identical
to sequential execution, with at most ``max_pending`` stretches in flight so
memory stays bounded.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Generic, TypeVar

from avatarstream.runtime.device_ops import DeviceOps, Event

T = TypeVar("T")


class StreamWorker(Generic[T]):
    """One worker thread on its own stream; ``submit`` queues work, ``take`` hands its result to the caller's stream."""

    def __init__(self, ops: DeviceOps, name: str) -> None:
        self.ops = ops
        self.stream = ops.new_stream()
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"avatarstream-{name}")

    def submit(self, work: Callable[[], T], inputs: Any = None) -> Future[tuple[T, Event]]:
        """Queue ``work`` behind what the caller's stream has queued so far; ``inputs`` (tensors it reads) stay valid for it."""
        self.ops.share(inputs, self.stream)
        return self._executor.submit(self._run, work, self.ops.compute_event())

    def _run(self, work: Callable[[], T], ready: Event) -> tuple[T, Event]:
        self.ops.fit_threads()
        with self.ops.on_stream(self.stream):
            self.ops.wait(ready)
            result = work()
            return result, self.ops.compute_event()

    def take(self, future: Future[tuple[T, Event]]) -> T:
        """The work's result, usable on the caller's stream (which waits for the work's event; the host does not)."""
        result, done = future.result()
        self.ops.wait(done)
        self.ops.share(result, None)
        return result

    def shutdown(self) -> None:
        with contextlib.suppress(Exception):
            self._executor.shutdown(wait=True, cancel_futures=True)


class FinalizeWorker(Generic[T]):
    """Final stages on a ``StreamWorker``, results read back in order, at most ``max_pending`` stretches in flight."""

    def __init__(self, ops: DeviceOps, max_pending: int = 2) -> None:
        self.max_pending = max_pending
        self._worker: StreamWorker[T] = StreamWorker(ops, "final")
        self._pending: deque[Future[tuple[T, Event]]] = deque()

    def submit(self, work: Callable[[], T], inputs: Any = None) -> None:
        self._pending.append(self._worker.submit(work, inputs))

    def ready(self, *, block: bool = False) -> Iterator[T]:
        """Results in order: those already done, plus (``block``) enough to respect ``max_pending``."""
        while self._pending and (self._pending[0].done() or (block and len(self._pending) > self.max_pending)):
            yield self._worker.take(self._pending.popleft())

    def drain(self) -> Iterator[T]:
        while self._pending:
            yield self._worker.take(self._pending.popleft())

    def close(self, *, cancel: bool = True) -> None:
        """Stop the worker; work not yet read is cancelled, or with ``cancel=False`` run to its end (its results and errors dropped)."""
        for future in self._pending:
            if cancel:
                future.cancel()
            else:
                concurrent.futures.wait([future])
        self._worker.shutdown()
        self._pending.clear()
