"""What a refused input must not leave behind in this process: threads and open file descriptors."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from pathlib import Path


def thread_names(ignore: Callable[[str], bool] = lambda name: False) -> list[str]:
    return sorted(t.name for t in threading.enumerate() if not ignore(t.name))


def open_fds() -> set[str]:
    """The targets of this process's open descriptors (a socket or pipe reads as its inode)."""
    targets = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            targets.add(f"{fd}->{os.readlink(f'/proc/self/fd/{fd}')}")
        except OSError:  # the descriptor listdir itself used, closed by now
            pass
    return targets


class Snapshot:
    """Threads and descriptors now; ``assert_settled`` waits (briefly) for both to come back to it."""

    def __init__(self, ignore_threads: Callable[[str], bool] = lambda name: False) -> None:
        self.ignore = ignore_threads
        self.threads = thread_names(ignore_threads)
        self.fds = open_fds()

    def assert_settled(self, settle_s: float = 3.0) -> None:
        deadline = time.monotonic() + settle_s
        while True:
            extra_threads = sorted(set(thread_names(self.ignore)) - set(self.threads))
            extra_fds = sorted(open_fds() - self.fds)
            if not extra_threads and not extra_fds:
                return
            if time.monotonic() > deadline:
                raise AssertionError(f"left behind: threads {extra_threads}, descriptors {extra_fds}")
            time.sleep(0.05)


def listing(folder: Path) -> set[str]:
    """Every path under ``folder``, relative to it."""
    return {str(p.relative_to(folder)) for p in folder.rglob("*")}
