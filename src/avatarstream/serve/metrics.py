"""Prometheus metrics of one app, in a registry of its own (several apps can live in one process).

Session ids never appear in labels: an id is the key to its session.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

LATENCY_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 5.0)
TTFF_BUCKETS = (0.1, 0.25, 0.5, 1.0, 2.0, 3.0, 5.0, 10.0, 30.0)
FPS_WINDOW_S = 5.0


class FrameRate:
    """Frames published per second over the last few seconds, all sessions together."""

    def __init__(self, window_s: float = FPS_WINDOW_S, clock: Callable[[], float] = time.monotonic) -> None:
        self.window_s = window_s
        self._clock = clock
        self._events: deque[tuple[float, int]] = deque()

    def add(self, frames: int) -> None:
        self._events.append((self._clock(), frames))

    def rate(self) -> float:
        horizon = self._clock() - self.window_s
        while self._events and self._events[0][0] < horizon:
            self._events.popleft()
        return sum(n for _, n in self._events) / self.window_s


class ServeMetrics:
    """Every metric the server exposes at /metrics."""

    def __init__(self, queued_audio_s: Callable[[], float]) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.sessions = Gauge("avatarstream_sessions", "Sessions and batch jobs running now", ["mode"], registry=r)
        self.started = Counter("avatarstream_sessions_started", "Sessions and batch jobs admitted", ["mode"], registry=r)
        self.rejected = Counter("avatarstream_sessions_rejected", "Requests refused because the server was full", registry=r)
        self.failed = Counter("avatarstream_sessions_failed", "Sessions and jobs that ended in an error", ["mode"], registry=r)
        self.ttff = Histogram("avatarstream_time_to_first_frame_seconds", "From session request to its first frame", ["mode"], buckets=TTFF_BUCKETS, registry=r)
        self.chunk_seconds = Histogram("avatarstream_chunk_seconds", "Wall time to generate one chunk", buckets=LATENCY_BUCKETS, registry=r)
        self.frames = Counter("avatarstream_frames", "Frames published", ["mode"], registry=r)
        self.frame_rate = FrameRate()
        Gauge("avatarstream_fps", f"Frames published per second over the last {FPS_WINDOW_S:.0f} s, all sessions", registry=r).set_function(
            self.frame_rate.rate
        )
        self.underruns = Counter("avatarstream_underruns", "Times a live session's generation fell behind the wall clock", registry=r)
        self.interrupts = Counter("avatarstream_interrupts", "Interrupts of live sessions", registry=r)
        Gauge("avatarstream_audio_queue_seconds", "Speech queued and not yet spoken, all live sessions", registry=r).set_function(queued_audio_s)

    def published(self, mode: str, frames: int) -> None:
        self.frames.labels(mode).inc(frames)
        self.frame_rate.add(frames)

    def render(self) -> bytes:
        return generate_latest(self.registry)
