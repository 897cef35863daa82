"""Chrome trace-event output (opens in Perfetto / chrome://tracing).

Events are written to the file as they happen, never kept in memory, so a
trace of a 10-hour session costs no RAM. The JSON array format tolerates a
missing closing bracket, so a trace cut short by a crash still opens.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any, ClassVar

from avatarstream.errors import PublishError
from avatarstream.pipeline.observer import RunObserver, StageSpan


class TraceWriter(RunObserver):
    """One complete ('X') event per stage run, one thread row per phase."""

    _TIDS: ClassVar[dict[str, int]] = {"init": 1, "chunk": 2, "final": 3}

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._file = open(self.path, "w", encoding="utf-8")  # noqa: SIM115 - closed in close()
        except OSError as exc:
            raise PublishError(f"cannot write trace {self.path}: {exc.strerror}; choose a writable path with --trace") from exc
        self._lock = threading.Lock()
        self._first = True
        self._write({"name": "process_name", "ph": "M", "pid": 1, "args": {"name": "avatarstream"}})
        for phase, tid in self._TIDS.items():
            self._write({"name": "thread_name", "ph": "M", "pid": 1, "tid": tid, "args": {"name": phase}})

    def _write(self, event: dict[str, Any]) -> None:
        with self._lock:
            self._file.write(("[\n" if self._first else ",\n") + json.dumps(event))
            self._first = False
            self._file.flush()

    def on_stage(self, span: StageSpan) -> None:
        args: dict[str, Any] = {}
        if span.chunk is not None:
            args["chunk"] = span.chunk.name
        if span.frames is not None:
            args["frames"] = list(span.frames)
        self._write(
            {
                "name": span.stage,
                "cat": span.phase,
                "ph": "X",
                "pid": 1,
                "tid": self._TIDS.get(span.phase, 0),
                "ts": round(span.start_s * 1e6, 1),
                "dur": round((span.end_s - span.start_s) * 1e6, 1),
                "args": args,
            }
        )

    def close(self) -> None:
        with self._lock:
            if not self._file.closed:
                self._file.write("\n]\n")
                self._file.close()
