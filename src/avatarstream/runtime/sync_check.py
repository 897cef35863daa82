"""Catch every host-synchronizing tensor operation of the chunk loop's steady state, on any device, with where it ran.

Counting the calls of the ``DeviceOps`` seam sees only the syncs that go
through it; a stray ``.item()`` in a stage does not. ``SyncCheck`` is a
``TorchFunctionMode``: torch hands it every torch function and ``Tensor``
method called on a thread it is pushed on, and it records those that make the
host wait for a device value (``sync_ops``: on a CPU, what would make it wait
on a GPU). Allowed reads (``runtime.host_reads``) pass. The steady state begins
once the first stretch's frames reach the host (the init stages and the first
chunks before it may sync).

Torch function modes are per thread: ``around`` pushes the check on the
calling thread (the loop's), and ``on_thread`` on a worker's (the finalize and
read-ahead threads run their work inside ``DeviceOps.on_stream``).

What the mode cannot judge on a CPU: a copy's direction (``.to(device)`` and
``copy_`` into a host tensor look alike there; on a GPU run they are judged),
and syncs inside an operator or a torch function it is handed whole (a
blocking copy from pageable memory): on a GPU, ``runtime.sync_debug`` has CUDA
itself refuse those.
"""

from __future__ import annotations

import contextlib
import sys
import threading
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

from avatarstream.runtime.host_reads import allowed_read, watching
from avatarstream.runtime.sync_ops import Places

TORCH_DIR = Path(torch.__file__).parent
HERE = Path(__file__).parent
#: Frames of the check itself, left out of where a sync happened.
OWN_FILES = {HERE / "sync_check.py", HERE / "sync_ops.py", HERE / "host_reads.py"}


@dataclass(frozen=True)
class Sync:
    """One stray sync: the operation, the stage it ran in, and the code that called it (innermost first)."""

    op: str
    stage: str | None
    stack: tuple[str, ...]
    thread: str

    def __str__(self) -> str:
        stage = f"stage {self.stage!r}" if self.stage else "no stage"
        return f"{self.op} in {stage} on thread {self.thread}, at " + " <- ".join(self.stack)


class SyncCheck(TorchFunctionMode):
    """Records the stray syncs of a run's steady state on ``device`` (``found``) and the allowed reads there (``allowed``)."""

    def __init__(self, device: torch.device, *, warmup_stretches: int = 1) -> None:
        super().__init__()
        self.places = Places(device)
        self.warmup_stretches = warmup_stretches  # stretches whose frames reach the host before the steady state
        self.found: list[Sync] = []
        self.allowed: Counter[str] = Counter()
        self.steady = False
        self._stretches = 0
        self._lock = threading.Lock()

    def __torch_function__(self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: dict[str, Any] | None = None) -> Any:
        kwargs = kwargs or {}
        if self.steady and allowed_read() is None and (op := self.places.sync_of(func, args, kwargs)) is not None:
            found = _located(op, sys._getframe(1))
            with self._lock:
                self.found.append(found)
        result = func(*args, **kwargs)
        self.places.mark(func, args, kwargs, result)
        return result

    def read_starts(self, what: str) -> None: ...

    def read_ends(self, what: str) -> None:
        with self._lock:
            if self.steady:
                self.allowed[what] += 1
            elif what == "frames":
                self._stretches += 1
                self.steady = self._stretches >= self.warmup_stretches

    @contextlib.contextmanager
    def around(self) -> Iterator[SyncCheck]:
        """Check the calling thread (the loop's) and hear of the allowed reads on every thread."""
        with watching(self), self:
            yield self

    @contextlib.contextmanager
    def on_thread(self) -> Iterator[None]:
        """Check the calling thread too (a worker's, for the work it does inside)."""
        with self:
            yield

    def report(self) -> str:
        """Each distinct stray sync once, with how often it happened."""
        counts = Counter(str(sync) for sync in self.found)
        return "\n".join(f"{n} x {sync}" for sync, n in counts.items())


def _located(op: str, frame: FrameType | None) -> Sync:
    """Where ``op`` was called: the project's frames (not torch's, not the check's), and the stage whose ``run`` they are under."""
    stack: list[str] = []
    stage: str | None = None
    while frame is not None:
        path = Path(frame.f_code.co_filename)
        if path not in OWN_FILES and not path.is_relative_to(TORCH_DIR):
            if len(stack) < 4:
                stack.append(f"{path.name}:{frame.f_lineno} {frame.f_code.co_name}")
            owner: Any = frame.f_locals.get("self")
            if stage is None and frame.f_code.co_name == "run" and all(hasattr(owner, a) for a in ("name", "phase", "writes")):
                stage = str(owner.name)
        frame = frame.f_back
    return Sync(op, stage, tuple(stack), threading.current_thread().name)
