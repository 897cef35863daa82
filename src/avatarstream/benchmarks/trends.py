"""Does a series measured over a long run keep rising? The soak's pass/fail rule, kept apart so it can be tested alone.

A series is compared with itself: the samples after the warm-up are cut into
thirds, and the last third's level (median, or peak for counts that swing with
the sessions open) may exceed the first third's by at most a tolerance. This
ignores a slow start and noise, and fails a leak that keeps growing.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

LEVELS: dict[str, Callable[[Sequence[float]], float]] = {"median": statistics.median, "max": max, "mean": statistics.fmean}


@dataclass(frozen=True)
class Tolerance:
    """How much higher the last third may be than the first: ``absolute`` plus ``relative`` of the first third's level."""

    absolute: float
    relative: float = 0.0
    level: str = "median"  # "max": for counts that swing with the sessions open (threads, descriptors); "mean": for bursty rates


def trend(times: Sequence[float], values: Sequence[float], tolerance: Tolerance, warmup_s: float) -> dict[str, Any]:
    """First and last third's level after ``warmup_s``, the rise, and whether it is within ``tolerance``."""
    kept = [v for t, v in zip(times, values, strict=True) if t >= warmup_s]
    if len(kept) < 3:
        return {"samples": len(kept), "ok": False, "why": "fewer than 3 samples after the warm-up: run longer"}
    third = len(kept) // 3
    level = LEVELS[tolerance.level]
    first, last = level(kept[:third]), level(kept[-third:])
    allowed = tolerance.absolute + tolerance.relative * abs(first)
    rise = last - first
    return {"samples": len(kept), "first": round(first, 3), "last": round(last, 3), "rise": round(rise, 3), "allowed": round(allowed, 3), "ok": rise <= allowed}
