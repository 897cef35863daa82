"""Running one stage: between the runtime's start and end calls, timed for the observers, its writes checked."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import torch

from avatarstream.errors import PipelineGraphError
from avatarstream.pipeline.chunks import Chunk
from avatarstream.pipeline.graph import with_next
from avatarstream.pipeline.observer import RunObserver, StageSpan
from avatarstream.pipeline.stage import Stage
from avatarstream.pipeline.state import SessionState, StageContext
from avatarstream.runtime.residency import Runtime


class StageRunner:
    """Runs a run's stages against its session; ``now`` is the run's clock (seconds since it started)."""

    def __init__(self, runtime: Runtime, session: SessionState, observers: Sequence[RunObserver]) -> None:
        self.runtime = runtime
        self.session = session
        self.observers = observers
        self.t0 = time.perf_counter()

    def now(self) -> float:
        return time.perf_counter() - self.t0

    def run(
        self, stage: Stage, values: dict[str, Any], upcoming: Stage, *, chunk: Chunk | None = None, frames: tuple[int, int] | None = None, flush: bool = False
    ) -> None:
        """Run one stage between the runtime's start/end calls; ``upcoming`` is what runs next (the runtime prefetches it);
        ``flush``: the stage's ``flush`` instead (the run has ended: the frames it still holds)."""
        start_s = self.now()
        self.runtime.stage_starts(stage.name, stage.modules(), upcoming.modules())
        with torch.inference_mode():
            context = StageContext(self.session, stage.name, values)
            stage.flush(context) if flush else stage.run(context)
        self.runtime.stage_ends(stage.name, stage.modules())  # no device sync: the next stage's work queues behind this one's
        missing = [name for name in (("frames",) if flush else stage.writes) if name not in values]
        if missing:
            raise PipelineGraphError(f"stage {stage.name!r} declared it writes {missing} but did not")
        self.tell(StageSpan(stage.name, stage.phase, start_s, self.now(), chunk, frames))

    def run_all(
        self, stages: Sequence[Stage], values: dict[str, Any], after: Stage, *, chunk: Chunk | None = None, frames: tuple[int, int] | None = None
    ) -> list[float]:
        """Run ``stages`` in order (``after`` comes next); the seconds each took."""
        seconds = []
        for stage, upcoming in with_next(stages, after):
            start = self.now()
            self.run(stage, values, upcoming, chunk=chunk, frames=frames)
            seconds.append(self.now() - start)
        return seconds

    def tell(self, span: StageSpan) -> None:
        for obs in self.observers:
            obs.on_stage(span)
