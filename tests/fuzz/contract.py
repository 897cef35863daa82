"""The contract every fuzz target keeps, checked around each input, whether libFuzzer (``make fuzz``) or the CI slice
feeds it: hostile bytes end in the parser's documented error (``InputError``) with a one-line message, or are accepted;
never another exception, never past a time bound, never growing the process's peak memory past a bound.

Peak memory is Linux's VmHWM, reset before each input (``/proc/self/clear_refs``), so each input is measured alone.
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from avatarstream.errors import InputError

MIB = 2**20
STATUS = Path("/proc/self/status")
CLEAR_REFS = Path("/proc/self/clear_refs")


@dataclass(frozen=True)
class Bounds:
    """What one input may cost: wall seconds, and growth of the peak resident memory over the memory before it."""

    seconds: float = 5.0
    rss_mib: int = 256


DEFAULT_BOUNDS = Bounds()


class Breach(Exception):
    """An input broke the contract. ``signature`` names the kind and the place, so repeats of one bug count once."""

    def __init__(self, message: str, signature: str) -> None:
        super().__init__(message)
        self.signature = signature


Run = Callable[[bytes], None]


def check(run: Run, data: bytes, bounds: Bounds) -> str | None:
    """Feed ``data`` to ``run``; the refusal's message, or None when it was accepted. Raises Breach otherwise."""
    before = _reset_peak()
    start = time.perf_counter()
    try:
        run(data)
        message = None
    except InputError as err:
        message = str(err)
        if not message.strip() or "\n" in message:
            raise Breach(f"InputError whose message is not one line: {message[:300]!r}", f"message:{_place(err)}") from err
    except Breach:
        raise
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as err:  # a Rust panic (pyo3's PanicException) is a BaseException: a breach too
        raise Breach(f"{type(err).__name__} instead of InputError: {' '.join(str(err).split())[:300]}", f"{type(err).__name__}:{_place(err)}") from err
    elapsed = time.perf_counter() - start
    if elapsed > bounds.seconds:
        raise Breach(f"took {elapsed:.1f} s, over the bound of {bounds.seconds:g} s (refused: {message!r})", "slow")
    grown = (_peak() - before) / MIB
    if grown > bounds.rss_mib:
        raise Breach(f"grew the peak resident memory by {grown:.0f} MiB, over the bound of {bounds.rss_mib} MiB", "memory")
    return message


def _place(err: BaseException) -> str:
    """The innermost frame of the traceback, as file:line (where the exception began)."""
    frames = traceback.extract_tb(err.__traceback__)
    if not frames:
        return "?"
    last = frames[-1]
    return f"{Path(last.filename).name}:{last.lineno}"


def _reset_peak() -> int:
    """Reset the kernel's peak-RSS mark and return the resident memory now, in bytes (Linux only)."""
    try:
        CLEAR_REFS.write_text("5")
    except OSError:  # not allowed: the growth is measured against the earlier peak instead (it then sees less, never more)
        return _peak()
    return _status("VmRSS")


def _peak() -> int:
    return _status("VmHWM")


def _status(key: str) -> int:
    for line in STATUS.read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) * 1024
    return 0
