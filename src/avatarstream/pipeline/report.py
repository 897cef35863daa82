"""The run report: time to first frame, speed, per-stage time, per-chunk records, memory.

Per-chunk records are spooled to a temporary file as they happen and only
streamed into the JSON at the end, so the report itself never grows in memory
with the session length (DESIGN.md §5).
"""

from __future__ import annotations

import json
import os
import resource
import sys
import tempfile
import threading
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil

from avatarstream.errors import PublishError
from avatarstream.pipeline.observer import ChunkDone, RunObserver, StageSpan


def current_rss_bytes() -> int:
    return int(psutil.Process().memory_info().rss)


def peak_rss_bytes() -> int:
    """The process's peak resident set size (ru_maxrss is KiB on Linux, bytes on macOS)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak if sys.platform == "darwin" else peak * 1024)


class ReportRecorder(RunObserver):
    """Collects the figures of one run; ``summary()`` gives them, ``write()`` saves them as JSON."""

    def __init__(
        self,
        peak_device_bytes: Callable[[], int | None] = lambda: None,
        extra: dict[str, Any] | None = None,
        late_fields: dict[str, Callable[[], Any]] | None = None,
        chunk_fields: Callable[[], dict[str, Any]] | None = None,
    ) -> None:
        self._peak_device_bytes = peak_device_bytes
        self.extra = dict(extra or {})
        self._late_fields = dict(late_fields or {})  # read when the summary is made (e.g. runtime counters)
        self._chunk_fields = chunk_fields  # read once per chunk (e.g. the runtime's bytes moved and peak memory)
        self.stage_seconds: dict[str, float] = defaultdict(float)
        self._stage_lock = threading.Lock()  # stages report from the loop, the finalize worker and the read-ahead thread
        self.ttff_s: float | None = None
        self.frames = 0
        self.duration_s = 0.0
        self.wall_s = 0.0
        self.num_chunks = 0
        self._spool = tempfile.TemporaryFile("w+", encoding="utf-8")  # noqa: SIM115 - closed in close()

    def on_stage(self, span: StageSpan) -> None:
        with self._stage_lock:
            self.stage_seconds[span.stage] += span.end_s - span.start_s

    def on_chunk(self, done: ChunkDone) -> None:
        record = {
            "kind": done.chunk.kind,
            "index": done.chunk.index,
            "timeline": list(done.timeline),
            "wall_s": round(done.end_s - done.start_s, 6),
            "resumable_bytes": done.resumable_bytes,
            "rss_bytes": current_rss_bytes(),
            "peak_rss_bytes": peak_rss_bytes(),  # the process's peak so far: one run's peak at 30 s against its peak at 10 min
            **(self._chunk_fields() if self._chunk_fields is not None else {}),
        }
        self._spool.write(json.dumps(record) + "\n")
        self.num_chunks += 1

    def on_frames(self, first_frame: int, count: int, at_s: float) -> None:
        if self.ttff_s is None and count > 0:
            self.ttff_s = at_s
        self.frames = max(self.frames, first_frame + count)

    def on_end(self, total_frames: int, duration_s: float, at_s: float) -> None:
        self.frames = total_frames
        self.duration_s = duration_s
        self.wall_s = at_s

    def summary(self) -> dict[str, Any]:
        """Everything but the per-chunk list."""
        wall = self.wall_s or float("nan")
        return {
            **self.extra,
            "ttff_s": self.ttff_s,
            "frames": self.frames,
            "duration_s": self.duration_s,
            "wall_s": self.wall_s,
            "fps_out": self.frames / wall if self.wall_s else None,
            "realtime_factor": self.duration_s / wall if self.wall_s else None,
            "peak_rss_bytes": peak_rss_bytes(),
            "peak_device_bytes": self._peak_device_bytes(),
            "stage_seconds": {k: round(v, 6) for k, v in self.stage_seconds.items()},
            "num_chunks": self.num_chunks,
            **{name: read() for name, read in self._late_fields.items()},
        }

    def write(self, path: str | os.PathLike[str]) -> dict[str, Any]:
        """Write the report JSON, streaming the spooled chunk records; returns the summary."""
        summary = self.summary()
        path = Path(path)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            with open(path, "w", encoding="utf-8") as out:
                head = json.dumps(summary, indent=2)
                out.write(head[:-2] + ',\n  "chunks": [')
                self._spool.seek(0)
                out.writelines(("\n    " if i == 0 else ",\n    ") + line.strip() for i, line in enumerate(self._spool))
                out.write("\n  ]\n}\n")
        except OSError as exc:
            raise PublishError(f"cannot write report {path}: {exc.strerror}; choose a writable path with --report") from exc
        return summary

    def close(self) -> None:
        self._spool.close()
