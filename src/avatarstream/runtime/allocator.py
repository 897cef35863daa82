"""glibc's malloc, kept from creeping: freed memory handed back to the system after each chunk and each ended session.

glibc gives a thread that finds its arena locked another one, up to eight per
core. Memory freed in one arena is reused only by the threads that allocate
from it, so a run whose threads (pipeline, encoder, sinks, sessions) contend
more often, as on a busy machine, spreads its short-lived chunk buffers over
more arenas, and each keeps its free fragments: RSS then grows with the length
of the run instead of staying flat. Measured and explained in docs/runtime.md.

``malloc_trim`` gives those free fragments back. It does nothing on other C
libraries (musl, macOS). ``MALLOC_ARENA_MAX=2`` in the environment also slows
the creep (fewer arenas), at the price of more lock contention between threads.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import platform
import threading
import time

MIN_TRIM_INTERVAL_S = 1.0  # a trim walks every arena under its lock: often enough to keep RSS flat, rare enough to cost nothing
_last_trim = {"at": -MIN_TRIM_INTERVAL_S}
_trim_lock = threading.Lock()


@functools.cache
def _glibc() -> ctypes.CDLL | None:
    if platform.libc_ver()[0] != "glibc":
        return None
    name = ctypes.util.find_library("c")
    return ctypes.CDLL(name) if name else None


def release_free_memory() -> None:
    """Return the free pages of every arena to the system (``malloc_trim``): what a finished chunk or session freed stops counting as RSS.

    At most once per ``MIN_TRIM_INTERVAL_S`` for the whole process, however many sessions call it."""
    libc = _glibc()
    if libc is None:
        return
    with _trim_lock:
        now = time.monotonic()
        if now - _last_trim["at"] < MIN_TRIM_INTERVAL_S:
            return
        _last_trim["at"] = now
    libc.malloc_trim(0)
