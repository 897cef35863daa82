"""glibc's malloc, kept from creeping: fewer arenas, and freed memory handed back to the system after each chunk.

glibc gives a thread that finds its arena locked another one, up to eight per
core. Memory freed in one arena is reused only by the threads that allocate
from it, so a run whose threads (pipeline, encoder, sinks, sessions) contend
more often, as on a busy machine, spreads its short-lived chunk buffers over
more arenas, and each keeps its free fragments: RSS then grows with the length
of the run instead of staying flat. Measured and explained in docs/runtime.md.

Both calls do nothing on other C libraries (musl, macOS), where this does not
apply, and ``MALLOC_ARENA_MAX`` set by the user wins over the bound.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import os
import platform

M_ARENA_MAX = -8  # from glibc's malloc.h
DEFAULT_ARENAS = 2


@functools.cache
def _glibc() -> ctypes.CDLL | None:
    if platform.libc_ver()[0] != "glibc":
        return None
    name = ctypes.util.find_library("c")
    return ctypes.CDLL(name) if name else None


def bound_arenas(arenas: int = DEFAULT_ARENAS) -> bool:
    """Cap glibc's malloc arenas for the rest of the process (call early, before threads start); True when applied."""
    libc = _glibc()
    if libc is None or "MALLOC_ARENA_MAX" in os.environ:
        return False
    return bool(libc.mallopt(M_ARENA_MAX, arenas))


def release_free_memory() -> None:
    """Return the free pages of every arena to the system (``malloc_trim``): what a finished chunk or session freed stops counting as RSS."""
    libc = _glibc()
    if libc is not None:
        libc.malloc_trim(0)
