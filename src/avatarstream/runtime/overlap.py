"""Finish chunk k (super-resolution, decode) while chunk k+1 generates.

Final stages run on one worker thread, in submission order, so the VAE's
causal cache sees frames in timeline order and the output is identical to
sequential execution. On CUDA the worker uses its own stream and waits on an
event recorded where the work was submitted; on CPU the thread is enough
(torch releases the GIL inside kernels). At most ``max_pending`` stretches
are in flight, so memory stays bounded.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Generic, TypeVar

import torch

T = TypeVar("T")


class FinalizeWorker(Generic[T]):
    def __init__(self, device: torch.device, max_pending: int = 2) -> None:
        self.device = device
        self.max_pending = max_pending
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="avatarstream-final")
        self._stream = torch.cuda.Stream(device) if device.type == "cuda" else None
        self._pending: deque[Future[T]] = deque()

    def submit(self, work: Callable[[], T]) -> None:
        ready = None
        if self._stream is not None:
            ready = torch.cuda.Event()
            ready.record()
        self._pending.append(self._executor.submit(self._run, work, ready))

    def _run(self, work: Callable[[], T], ready: torch.cuda.Event | None) -> T:
        if self._stream is None:
            return work()
        assert ready is not None, "work for the CUDA stream is submitted with its ready event"
        with torch.cuda.stream(self._stream):
            self._stream.wait_event(ready)
            return work()

    def ready(self, *, block: bool = False) -> Iterator[T]:
        """Results in order: those already done, plus (``block``) enough to respect ``max_pending``."""
        while self._pending and (self._pending[0].done() or (block and len(self._pending) > self.max_pending)):
            yield self._pending.popleft().result()

    def drain(self) -> Iterator[T]:
        while self._pending:
            yield self._pending.popleft().result()

    def close(self, *, cancel: bool = True) -> None:
        """Stop the worker; work not yet read is cancelled, or with ``cancel=False`` run to its end (its results and errors dropped)."""
        for future in self._pending:
            if cancel:
                future.cancel()
            else:
                concurrent.futures.wait([future])
        with contextlib.suppress(Exception):
            self._executor.shutdown(wait=True, cancel_futures=True)
        self._pending.clear()
