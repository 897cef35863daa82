"""On a GPU, CUDA itself refuses (or reports) every host sync of the chunk loop's steady state; elsewhere a no-op that says so.

``torch.cuda.set_sync_debug_mode`` makes each operation that makes the host
wait for a stream (``.item()``, a blocking copy, a synchronize) warn or raise,
those inside operators too, which ``runtime.sync_check`` cannot see on a CPU.
The mode is one setting for the whole process, so ``steady_sync_debug`` sets
it once the first stretch's frames reached the host (the steady state: the
init stages and the first chunks may sync), gives back the mode it found while
an allowed host read (``runtime.host_reads``) runs on any thread, and restores
it at the end. A stray sync on another thread during an allowed read goes
unseen; the CPU check has no such gap.

    with steady_sync_debug(device, "error"):   # the GPU scripts' --sync-debug
        measure(pipeline, ...)
"""

from __future__ import annotations

import contextlib
import threading
import traceback
import warnings
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

import torch

from avatarstream.runtime.host_reads import watching

#: The GPU scripts' --sync-debug choices: off, count what warns (by line), or refuse it (the run stops there).
MODES = ("off", "warn", "error")
PACKAGE = Path(__file__).parent.parent


class SteadySyncDebug:
    """Switches CUDA's sync debug mode to ``mode`` for the steady state, back to ``found`` inside allowed reads."""

    def __init__(self, mode: str, found: int, warmup_stretches: int = 1) -> None:
        self.mode, self.found, self.warmup_stretches = mode, found, warmup_stretches
        self.steady = False
        self._stretches = 0
        self._open = 0  # allowed reads running now, on any thread
        self._lock = threading.Lock()

    def read_starts(self, what: str) -> None:
        with self._lock:
            self._open += 1
            if self.steady:
                torch.cuda.set_sync_debug_mode(self.found)

    def read_ends(self, what: str) -> None:
        with self._lock:
            self._open -= 1
            if not self.steady and what == "frames":
                self._stretches += 1
                self.steady = self._stretches >= self.warmup_stretches
            if self.steady and self._open == 0:
                torch.cuda.set_sync_debug_mode(self.mode)


@contextlib.contextmanager
def steady_sync_debug(device: torch.device, mode: str, say: Callable[[str], None] = print) -> Iterator[Counter[str]]:
    """The runs inside have their steady state under CUDA's sync debug ``mode``; yields the count, by project line, of
    the syncs that warned there (``warn``). Off, or not on CUDA: nothing changes (a CPU dry run says so)."""
    lines: Counter[str] = Counter()
    if mode not in MODES:
        raise ValueError(f"sync debug mode {mode!r}: choose one of {', '.join(MODES)}")
    if mode == "off" or device.type != "cuda":
        if mode != "off":
            say(f"--sync-debug {mode}: a no-op on {device.type} (CUDA's sync debug mode needs a CUDA GPU; the CPU tests check syncs with runtime.sync_check)")
        yield lines
        return
    found = torch.cuda.get_sync_debug_mode()
    caught: list[warnings.WarningMessage] = []
    with contextlib.ExitStack() as stack:
        if mode == "warn":  # only then: a caller's own count of the warnings (the frames reads) keeps its part
            caught = stack.enter_context(warnings.catch_warnings(record=True)) or []
            warnings.simplefilter("always")
        stack.enter_context(watching(SteadySyncDebug(mode, found)))
        try:
            yield lines
        finally:
            torch.cuda.set_sync_debug_mode(found)
    count_sync_warnings(caught, lines)


def count_sync_warnings(caught: Iterable[warnings.WarningMessage], lines: Counter[str]) -> None:
    """Add to ``lines``, by ``file:line``, the warnings CUDA's sync debug mode gave (other warnings are left out)."""
    for warning in caught:
        if "synchroniz" in str(warning.message):
            lines[f"{Path(warning.filename).name}:{warning.lineno}"] += 1


def refused_at(exc: BaseException) -> str | None:
    """The innermost project line in ``exc``'s traceback (where a refused sync was called), if any."""
    inside = [f for f in traceback.extract_tb(exc.__traceback__) if Path(f.filename).is_relative_to(PACKAGE)]
    return f"{Path(inside[-1].filename).name}:{inside[-1].lineno} {inside[-1].name}" if inside else None
