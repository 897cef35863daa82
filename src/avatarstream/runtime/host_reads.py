"""The host reads of device values the chunk loop is allowed: declared here, each with its reason, and nowhere else.

Every other host-synchronizing tensor operation (``.item()``, ``.cpu()``,
``.tolist()``, a tensor in an ``if``, boolean-mask indexing, ...) on a loop
thread in the steady state is a stray sync: ``runtime.sync_check`` reports it
on any device, and on a GPU ``runtime.sync_debug`` makes CUDA refuse it. Code
that must read a device value wraps the read in ``host_read(what)``, with
``what`` one of ``ALLOWED``; those checks let it through and count it.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Protocol

#: what -> why the loop may make the host wait for it.
ALLOWED: dict[str, str] = {
    "frames": "a finished stretch's frames go to the encoder and the frame sinks, which take host memory; one stream "
    "sync per stretch, through DeviceOps.to_host, on the thread that finished the stretch",
    "resumable_state": "only for a run whose observers keep a resumable state (a fleet's replica): the state after each "
    "chunk is copied to the host, so that another process can resume the session after a loss (pipeline/resume.py)",
}


class Watcher(Protocol):
    """Told when a thread starts and ends an allowed host read (``watching``)."""

    def read_starts(self, what: str) -> None: ...

    def read_ends(self, what: str) -> None: ...


class _Reading(threading.local):
    what: str | None = None


_reading = _Reading()
_watchers: list[Watcher] = []
_lock = threading.Lock()


def allowed_read() -> str | None:
    """The allowed host read this thread is inside, if any."""
    return _reading.what


@contextlib.contextmanager
def host_read(what: str) -> Iterator[None]:
    """Inside, this thread reads a device value on the host for reason ``what`` (a key of ``ALLOWED``)."""
    if what not in ALLOWED:
        raise KeyError(f"{what!r} is not an allowed host read; declare it in runtime.host_reads.ALLOWED with its reason")
    before, _reading.what = _reading.what, what
    with _lock:
        watchers = tuple(_watchers)
    for watcher in watchers:
        watcher.read_starts(what)
    try:
        yield
    finally:
        _reading.what = before
        for watcher in watchers:
            watcher.read_ends(what)


@contextlib.contextmanager
def watching(watcher: Watcher) -> Iterator[Watcher]:
    """``watcher`` hears of every allowed host read, on any thread, while inside."""
    with _lock:
        _watchers.append(watcher)
    try:
        yield watcher
    finally:
        with _lock:
            _watchers.remove(watcher)
