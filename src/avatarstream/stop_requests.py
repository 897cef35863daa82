"""Ctrl-C and SIGTERM while a render runs: taken at the next chunk boundary, where stopping is safe.

Python raises a signal's exception wherever the main thread is when the handler runs. Inside a render loop that can be
a place that loses it or cannot survive it: PyAV's audio resampler swallowed it (caught with the handler's stack,
inside ``av.error.err_check`` under ``AudioResampler.resample``) and the render ran to its end, about once in 40 stops;
landing elsewhere, a stop hung the render's exit. So while the command line runs (``handled``) its handlers note the
stop, and inside a render's chunk loop (``at_chunk_boundaries``) the first stop is only noted: the loop raises it at
its next chunk boundary (``raise_if_requested``), or once the outputs are final if it came while they were being
finalized. A second stop raises at once (a loop waiting for live audio that does not come). Outside a chunk loop
(loading, serving) a stop raises at once, as Python's own handler does.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Callable, Iterator
from types import FrameType

_requested: list[Callable[[], BaseException]] = []
_deferring = [0]  # depth of chunk loops running on the main thread


def _on_sigint(signum: int, frame: FrameType | None) -> None:
    _stop(KeyboardInterrupt)


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    """SIGTERM as an exception, so open outputs are finalized on the way out (exit code 128 + 15)."""
    _stop(lambda: SystemExit(128 + signum))


def _stop(make: Callable[[], BaseException]) -> None:
    _requested.append(make)
    if not _deferring[0] or len(_requested) > 1:
        raise make()


@contextlib.contextmanager
def handled() -> Iterator[None]:
    """Inside, SIGINT and SIGTERM stop the command (at once, or at a chunk loop's next boundary); the previous handlers
    come back after (call from the main thread, as ``signal.signal`` requires)."""
    previous = signal.signal(signal.SIGINT, _on_sigint), signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous[0])
        signal.signal(signal.SIGTERM, previous[1])
        _requested.clear()


@contextlib.contextmanager
def at_chunk_boundaries() -> Iterator[None]:
    """A chunk loop and the finalizing of its outputs: a stop is raised by ``raise_if_requested`` at the loop's chunk
    boundaries, or here once the block is through. Only on the main thread, where signal handlers run; elsewhere it
    changes nothing."""
    main = threading.current_thread() is threading.main_thread()
    _deferring[0] += main
    try:
        yield
    finally:
        _deferring[0] -= main
    raise_if_requested()


def raise_if_requested() -> None:
    """Raise the stop a signal asked for, if one did (the chunk loop calls this at each boundary; on the main thread only)."""
    if _requested and threading.current_thread() is threading.main_thread():
        raise _requested[-1]()
