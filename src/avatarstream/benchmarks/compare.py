"""Residency configs side by side on the same model and inputs, in one process (``bench --scenario residency``).

Each config gets a fresh runtime over the same modules (the previous runtime
is closed, which hands the weights back to the host), runs the same request,
and is summarised from the runtime's own figures. Frames are hashed as they
come, so the comparison holds no frames and its memory does not grow with
the length of the request; the first config is the reference for
``outputs_identical``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from avatarstream.pipeline.observer import ChunkDone, RunObserver
from avatarstream.pipeline.pipeline import Pipeline
from avatarstream.publish.media import MediaChunk
from avatarstream.runtime.residency import Runtime

RunRequest = Callable[[Pipeline, Sequence[RunObserver]], Iterable[MediaChunk]]


def standard_configs(transformers: Sequence[str], slots: int = 2) -> dict[str, dict[str, str]]:
    """Resident everywhere, offloaded everywhere, and the transformers streamed with the rest offloaded."""
    return {
        "resident": {},
        "offloaded": {"default": "offloaded"},
        f"streamed:{slots}": {**{name: f"streamed:{slots}" for name in transformers}, "default": "offloaded"},
    }


class _ChunkFigures(RunObserver):
    """Running totals of the runtime's per-chunk figures (nothing kept per chunk)."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self.chunks = 0
        self.wall_s = 0.0
        self.h2d_bytes = 0
        self.peak_device_bytes: int | None = None
        self.peak_weight_bytes = 0

    def on_chunk(self, done: ChunkDone) -> None:
        stats = self.runtime.take_chunk_stats()
        self.chunks += 1
        self.wall_s += done.end_s - done.start_s
        self.h2d_bytes += stats["h2d_bytes"] or 0
        self.peak_weight_bytes = max(self.peak_weight_bytes, stats["peak_weight_bytes"] or 0)
        if stats["peak_device_bytes"] is not None:
            self.peak_device_bytes = max(self.peak_device_bytes or 0, stats["peak_device_bytes"])


def compare_policies(
    make_pipeline: Callable[[dict[str, str]], Pipeline], configs: Mapping[str, Mapping[str, str]], run: RunRequest
) -> dict[str, dict[str, Any]]:
    """Run ``run(pipeline, observers)`` once per residency config; per config label, return:

    ``wall_s_per_chunk``, ``switch_ms_mean`` / ``switch_ms_max`` (exposed stage-switch time),
    ``h2d_bytes_per_chunk``, ``peak_device_bytes`` (allocator; None on CPU),
    ``peak_weight_bytes`` (weights held on the device), ``outputs_identical`` (frames
    equal to the first config's, bit for bit), plus ``chunks``, ``frames`` and ``stage_switches``.
    """
    results: dict[str, dict[str, Any]] = {}
    reference: str | None = None
    for label, config in configs.items():
        pipeline = make_pipeline(dict(config))
        runtime = pipeline.runtime
        try:
            pipeline.prepare()
            runtime.take_chunk_stats()  # what prepare() moved is load time, not per-chunk traffic
            figures = _ChunkFigures(runtime)
            digest, frames = hashlib.sha256(), 0
            for media in run(pipeline, [figures]):
                digest.update(np.ascontiguousarray(media.frames).tobytes())
                frames += media.num_frames
            switches = runtime.switch_summary()
        finally:
            runtime.close()
        reference = reference or digest.hexdigest()
        count = sum(s["count"] for s in switches.values())
        chunks = max(figures.chunks, 1)
        results[label] = {
            "config": dict(config),
            "chunks": figures.chunks,
            "frames": frames,
            "wall_s_per_chunk": figures.wall_s / chunks,
            "switch_ms_mean": sum(s["mean_ms"] * s["count"] for s in switches.values()) / count if count else 0.0,
            "switch_ms_max": max((s["max_ms"] for s in switches.values()), default=0.0),
            "h2d_bytes_per_chunk": figures.h2d_bytes / chunks,
            "peak_device_bytes": figures.peak_device_bytes,
            "peak_weight_bytes": figures.peak_weight_bytes,
            "outputs_identical": digest.hexdigest() == reference,
            "stage_switches": switches,
        }
    return results
