"""Ctrl-C and SIGTERM stop a render at its next chunk boundary too, not only where their exception lands.

Python raises a signal's exception wherever the main thread is when the handler runs, and a library that swallows it
there loses it. PyAV's audio resampler does: a ``KeyboardInterrupt`` or ``SystemExit`` raised while its error check
builds the "try again" error it expects is gone, and the render ran to its end (about one stop in 40 on this machine,
caught with the handler's stack). So while the command line runs (``handled``), its handlers also note the request,
and the render loop raises it again at each chunk boundary (``raise_if_requested``): the outputs are finalized either
way, and the exit code is the signal's.
"""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Callable, Iterator
from types import FrameType

_requested: list[Callable[[], BaseException]] = []


def _on_sigint(signum: int, frame: FrameType | None) -> None:
    _requested.append(KeyboardInterrupt)
    raise KeyboardInterrupt


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    """SIGTERM as an exception, so open outputs are finalized on the way out (exit code 128 + 15)."""
    _requested.append(lambda: SystemExit(128 + signum))
    raise SystemExit(128 + signum)


@contextlib.contextmanager
def handled() -> Iterator[None]:
    """Inside, SIGINT and SIGTERM raise at once and are noted for ``raise_if_requested``; the previous handlers come back
    after (call from the main thread, as ``signal.signal`` requires)."""
    previous = signal.signal(signal.SIGINT, _on_sigint), signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous[0])
        signal.signal(signal.SIGTERM, previous[1])
        _requested.clear()


def raise_if_requested() -> None:
    """Raise the stop a signal asked for, if its own exception was lost on the way (a chunk boundary calls this)."""
    if _requested:
        raise _requested[-1]()
