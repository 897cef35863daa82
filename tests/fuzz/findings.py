"""Where a fuzzing run keeps what it found: per target, one input per kind of breach (the smallest seen), with a text file
that says what broke and where. libFuzzer's own artifacts (``timeout-*``, ``oom-*``: an input it had to kill) land in
the same folder."""

from __future__ import annotations

import hashlib
import re
import traceback
from pathlib import Path

from fuzz.contract import Breach


def record(folder: Path, breach: Breach, data: bytes) -> Path:
    """Keep ``data`` as the example of ``breach``'s kind, unless a smaller one is kept already; returns its path."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"breach-{slug(breach.signature)}"
    if path.exists() and path.stat().st_size <= len(data):
        path.touch()  # found again: the run's report lists it
        return path
    path.write_bytes(data)
    cause = breach.__cause__
    trace = "".join(traceback.format_exception(cause)) if cause is not None else ""
    note(path).write_text(f"{breach}\nsha1 {hashlib.sha1(data).hexdigest()}, {len(data)} bytes\n\n{trace}")
    return path


def note(path: Path) -> Path:
    """The text file that says what the input at ``path`` broke."""
    return path.parent / (path.name + ".txt")


def slug(signature: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", signature).strip("-")[:80] or "unknown"


def inputs(folder: Path, since: float = 0.0) -> list[Path]:
    """The saved inputs of a findings folder (not their notes), those written or found again since ``since`` (a time)."""
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.glob("*") if p.is_file() and not p.name.endswith(".txt") and p.stat().st_mtime >= since)
