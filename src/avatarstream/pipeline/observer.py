"""Hooks through which the pipeline reports what it does, without knowing who listens."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from avatarstream.pipeline.chunks import Chunk

if TYPE_CHECKING:
    from avatarstream.pipeline.resume import Resumable


@dataclass(frozen=True)
class StageSpan:
    """One stage run: wall-clock seconds relative to the start of the run."""

    stage: str
    phase: str
    start_s: float
    end_s: float
    chunk: Chunk | None = None
    frames: tuple[int, int] | None = None


@dataclass(frozen=True)
class ChunkDone:
    """One executed chunk and the frames it contributed to the published timeline.

    ``resumable_bytes``: what the run's resumable state at the boundary after
    this chunk weighs, weighed (not copied) on every run, taken or not.
    """

    chunk: Chunk
    timeline: tuple[int, int]
    start_s: float
    end_s: float
    resumable_bytes: int = 0


class RunObserver:
    """Override what you need; every hook is optional.

    ``on_resumable`` gets the state at each chunk boundary once the frames before the boundary were yielded, only for
    observers that set ``wants_resumable`` (taking the state copies the held latents and what the stages need to resume to
    the host). It is called on the thread that iterates the run; a boundary superseded by the next one before its frames
    are out is skipped (the next one is handed on at the same moment)."""

    wants_resumable = False

    def on_start(self) -> None: ...

    def on_stage(self, span: StageSpan) -> None: ...

    def on_chunk(self, done: ChunkDone) -> None: ...

    def on_frames(self, first_frame: int, count: int, at_s: float) -> None: ...

    def on_end(self, total_frames: int, duration_s: float, at_s: float) -> None: ...

    def on_resumable(self, state: Resumable) -> None: ...
