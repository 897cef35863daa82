"""Exposed time of stage switches, per kind of switch (``audio_to_video->super_resolution``...).

GPU: CUDA events on the compute stream, one after the last kernel of a stage
and one right before the first kernel of the next; the time between them is
time the GPU had nothing to do because of the switch. CPU: nothing overlaps,
so the exposed time is the wall time the compute thread spends inside the
previous stage's release plus this stage's acquire (pipeline bookkeeping and
the frame consumer are not part of it).
"""

from __future__ import annotations

import threading
import time
from collections import defaultdict, deque
from dataclasses import dataclass
from typing import Any

import torch

MAX_PENDING = 64
"""GPU event pairs kept unresolved before the oldest is waited for (bounds memory on endless sessions)."""


@dataclass
class SwitchStat:
    count: int = 0
    total_s: float = 0.0
    max_s: float = 0.0

    def add(self, seconds: float) -> None:
        self.count += 1
        self.total_s += seconds
        self.max_s = max(self.max_s, seconds)


class _Marks(threading.local):
    """One thread's place in its sequence of stages (class attributes are each thread's defaults)."""

    previous: str | None = None
    mark = 0.0
    release_s = 0.0
    end: Any = None  # CUDA event after the previous stage's last kernel


class SwitchTimer:
    """CPU flavour: wall time inside release + acquire.

    Marks are per thread: with the pipeline's overlap, final stages switch
    among themselves on a worker thread while chunk stages switch on the main one.
    """

    def __init__(self) -> None:
        self.stats: dict[str, SwitchStat] = defaultdict(SwitchStat)
        self._marks = _Marks()
        self._lock = threading.Lock()

    def stage_done(self, stage: str) -> None:
        """The stage's compute is queued; its release follows."""
        self._marks.previous = stage
        self._marks.mark = time.perf_counter()

    def released(self) -> None:
        self._marks.release_s = time.perf_counter() - self._marks.mark

    def acquiring(self) -> None:
        self._marks.mark = time.perf_counter()

    def ready(self, stage: str) -> None:
        """The stage's modules are usable; its first kernel comes next."""
        marks = self._marks
        if marks.previous is not None:
            self._add(f"{marks.previous}->{stage}", marks.release_s + time.perf_counter() - marks.mark)

    def _add(self, name: str, seconds: float) -> None:
        with self._lock:
            self.stats[name].add(seconds)

    def summary(self) -> dict[str, dict[str, float]]:
        """Per kind of switch: count, mean and max exposed milliseconds."""
        with self._lock:
            return {name: {"count": st.count, "mean_ms": 1e3 * st.total_s / st.count, "max_ms": 1e3 * st.max_s} for name, st in sorted(self.stats.items())}


class CudaSwitchTimer(SwitchTimer):
    """GPU flavour: CUDA events on the thread's current stream, between the last kernel of one stage and the first of the next."""

    def __init__(self, device: torch.device) -> None:
        super().__init__()
        self.device = device
        self._pending: deque[tuple[str, torch.cuda.Event, torch.cuda.Event]] = deque()

    def _event(self) -> torch.cuda.Event:
        event = torch.cuda.Event(enable_timing=True)
        event.record(torch.cuda.current_stream(self.device))
        return event

    def stage_done(self, stage: str) -> None:
        self._marks.previous = stage
        self._marks.end = self._event()

    def released(self) -> None: ...

    def acquiring(self) -> None: ...

    def ready(self, stage: str) -> None:
        marks = self._marks
        if marks.previous is None or marks.end is None:
            return
        with self._lock:
            self._pending.append((f"{marks.previous}->{stage}", marks.end, self._event()))
            self._resolve(wait_beyond=MAX_PENDING)

    def _resolve(self, wait_beyond: int) -> None:
        """Turn finished event pairs into figures; wait for the oldest while more than ``wait_beyond`` are pending."""
        while self._pending:
            name, end, start = self._pending[0]
            if len(self._pending) > wait_beyond:
                start.synchronize()
            elif not start.query():
                return
            self.stats[name].add(end.elapsed_time(start) / 1e3)
            self._pending.popleft()

    def summary(self) -> dict[str, dict[str, float]]:
        with self._lock:
            self._resolve(wait_beyond=0)
        return super().summary()


def switch_timer(device: torch.device) -> SwitchTimer:
    return CudaSwitchTimer(device) if device.type == "cuda" else SwitchTimer()
