"""The fleet's Prometheus metrics at the ingress: slots busy and free, and the per-session figures the single server has,
gathered from the replicas' reports."""

from __future__ import annotations

from collections.abc import Callable

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from avatarstream.serve.metrics import TTFF_BUCKETS, FrameRate

RESUME_BUCKETS = (0.25, 0.5, 1.0, 2.0, 3.0, 5.0, 10.0, 30.0, 60.0)


class FleetMetrics:
    def __init__(self, busy: Callable[[], float], free: Callable[[], float], draining: Callable[[], float]) -> None:
        self.registry = r = CollectorRegistry()
        Gauge("avatarstream_fleet_slots_busy", "Replicas holding a session", registry=r).set_function(busy)
        Gauge("avatarstream_fleet_slots_free", "Running replicas without a session", registry=r).set_function(free)
        Gauge("avatarstream_fleet_slots_draining", "Replicas going away once their session ends", registry=r).set_function(draining)
        self.started = Counter("avatarstream_fleet_sessions_started", "Sessions admitted", registry=r)
        self.rejected = Counter("avatarstream_fleet_sessions_rejected", "Session requests refused because every slot was busy", registry=r)
        self.failed = Counter("avatarstream_fleet_sessions_failed", "Sessions that ended in an error", registry=r)
        self.lost = Counter("avatarstream_fleet_replicas_lost", "Times a session's replica or node died", registry=r)
        self.resumed = Counter("avatarstream_fleet_sessions_resumed", "Sessions carried on on another replica", registry=r)
        self.resume_seconds = Histogram(
            "avatarstream_fleet_resume_seconds", "From a lost replica to the session running on another", buckets=RESUME_BUCKETS, registry=r
        )
        self.ttff = Histogram("avatarstream_time_to_first_frame_seconds", "From session request to its first frame", buckets=TTFF_BUCKETS, registry=r)
        self.frames = Counter("avatarstream_frames", "Frames published, all replicas", registry=r)
        self.underruns = Counter("avatarstream_underruns", "Times a live session's generation fell behind the wall clock", registry=r)
        self.frame_rate = FrameRate()
        Gauge("avatarstream_fps", "Frames published per second over the last seconds, all sessions", registry=r).set_function(self.frame_rate.rate)

    def render(self) -> bytes:
        return generate_latest(self.registry)
