"""The final stages of a stretch (super-resolution, decode), and where they run: inline, on a worker, or on another rank.

Every stretch of latents that became final is bound with what its frames are
published with (a ``Finish``), then handed to the run's ``Finals``: one
executor, chosen once per run. ``InlineFinals`` runs it at once;
``QueuedFinals`` hands it to a worker that finishes it while the next chunk
generates: a local thread with its own stream (overlap), or, in a run split
over processes, the role a parallel layout gives this rank
(``runtime.parallel.roles``); ``NoFinals`` is a rank that finishes nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from avatarstream.errors import PipelineGraphError
from avatarstream.pipeline.chunks import Chunk, Piece
from avatarstream.pipeline.frame_ledger import FrameLedger
from avatarstream.pipeline.observer import StageSpan
from avatarstream.pipeline.resume import StageParts, stage_parts
from avatarstream.pipeline.stage import Stage
from avatarstream.pipeline.stage_runner import StageRunner
from avatarstream.publish.media import MediaChunk
from avatarstream.runtime.device_ops import DeviceOps
from avatarstream.runtime.parallel.stage_pipe import Decoded, Stretch

#: The final stages' parts of a stretch finished on another rank: a run split over processes is not resumed.
ELSEWHERE = StageParts({}, 0)


@dataclass(frozen=True)
class Done:
    """A finished stretch: the frames that came out of it (None: a stage holding frames gave none out yet), and the final
    stages' resume parts right after they made them."""

    media: MediaChunk | None
    final: StageParts


class FinalStages:
    """A run's final stages: run on a stretch's values, and what they need to resume, weighed after each stretch."""

    def __init__(self, runner: StageRunner, stages: Sequence[Stage], ops: DeviceOps, ledger: FrameLedger, *, take_parts: bool) -> None:
        self.runner, self.stages, self.ops, self.ledger = runner, tuple(stages), ops, ledger
        self.take_parts = take_parts  # copy the parts to the host (observers want resumable states), not only weigh them
        self.nbytes = 0  # what their resume parts weighed after they last ran
        self.holds_frames = bool(self.stages) and self.stages[-1].holds_frames  # only the last may (``graph.validate_graph``)

    def run(self, step: dict[str, Any], after: Stage, chunk: Chunk | None, frames: tuple[int, int]) -> Decoded:
        """The final stages on ``step`` here: their frames on the host, with each stage's seconds."""
        seconds = self.runner.run_all(self.stages, step, after, chunk=chunk, frames=frames)
        return Decoded(self.ops.to_host(step["frames"]), seconds)

    def flush(self) -> Decoded:
        """The run has ended: the frames the holding stage still has, on the host."""
        values: dict[str, Any] = {}
        stage, start = self.stages[-1], self.runner.now()
        self.runner.run(stage, values, stage, flush=True)
        return Decoded(self.ops.to_host(values["frames"]), [self.runner.now() - start])

    def parts(self) -> StageParts:
        """Their resume parts as they stand (right after they ran): weighed always, taken when observers want states."""
        parts = stage_parts(self.stages, self.runner.session.caches, take=self.take_parts)
        self.nbytes = parts.nbytes
        return parts


@dataclass
class Finish:
    """One stretch of final latents and what its frames are published with; run here (``__call__``) or elsewhere (``stretch``)."""

    finals: FinalStages
    chunk: Chunk
    piece: Piece
    step: dict[str, Any]
    after: Stage  # what runs once the final stages are done
    first: int
    count: int
    keep: int
    audio: np.ndarray

    @property
    def frames_range(self) -> tuple[int, int]:
        return (self.piece.start, self.piece.end)

    def __call__(self) -> Done:
        """Finish here; the resume parts are taken on the thread that ran the stages, before the next stretch."""
        decoded = self.decoded()
        return Done(self._media(decoded.frames), self.finals.parts())

    @property
    def stages(self) -> Sequence[Stage]:
        return self.finals.stages

    @property
    def stretch(self) -> Stretch:
        return Stretch(self.step["latents"], self.frames_range, self.chunk.key)

    def decoded(self) -> Decoded:
        """The final stages run here, their frames for this rank or another to publish."""
        return self.finals.run(self.step, self.after, self.chunk, self.frames_range)

    def complete(self, decoded: Decoded) -> Done:
        """The frames another rank made, with the spans of its stages (ending now, on this rank's clock)."""
        tell_spans(self, decoded)
        return Done(self._media(decoded.frames), ELSEWHERE)

    def _media(self, frames: np.ndarray) -> MediaChunk | None:
        if frames.shape[0] != self.count and not self.finals.holds_frames:
            raise PipelineGraphError(f"final stages returned {frames.shape[0]} frames for a stretch of {self.count}")
        self.finals.ledger.given(self.first, self.count, self.keep, self.audio)
        return self.finals.ledger.take(frames)


@dataclass
class Flush:
    """The end of a run whose last final stage holds frames: what it still holds, made here (``__call__``) or elsewhere."""

    finals: FinalStages
    chunk: None = None
    frames_range: None = None
    stretch: None = None  # nothing to send: the rank that runs the final stages flushes them

    @property
    def stages(self) -> Sequence[Stage]:
        return self.finals.stages[-1:]

    def __call__(self) -> Done:
        return Done(self._media(self.decoded().frames), self.finals.parts())

    def decoded(self) -> Decoded:
        return self.finals.flush()

    def complete(self, decoded: Decoded) -> Done:
        tell_spans(self, decoded)
        return Done(self._media(decoded.frames), ELSEWHERE)

    def _media(self, frames: np.ndarray) -> MediaChunk | None:
        media = self.finals.ledger.take(frames)
        if self.finals.ledger.frames_owed:
            name = self.finals.stages[-1].name
            raise PipelineGraphError(
                f"stage {name!r} still held {self.finals.ledger.frames_owed} frames after its flush; it must give out every frame it was given"
            )
        return media


def tell_spans(work: Finish | Flush, decoded: Decoded) -> None:
    """The spans of the stages another rank ran for ``work`` (ending now, on this rank's clock)."""
    end = work.finals.runner.now()
    for stage, seconds in zip(reversed(work.stages), reversed(decoded.stage_seconds), strict=False):
        work.finals.runner.tell(StageSpan(stage.name, stage.phase, end - seconds, end, work.chunk, work.frames_range))
        end -= seconds


class Finals(Protocol):
    """Where a run's final stages run; ``submit`` returns the stretches whose frames are ready now, in timeline order."""

    runs_here: bool  # False: this rank makes no frames (a follower whose collective work is done with the chunk)
    overlaps: bool  # stretches finish while the next chunk generates (so the next chunk's context may be read ahead too)

    def submit(self, finish: Finish | Flush, *, first: bool) -> Iterable[Done]:
        """Hand on a stretch (or the end of a run whose final stages hold frames); ``first``: the run's first frames, waited
        for (time to first frame beats overlap)."""
        ...

    def drain(self) -> Iterable[Done]:
        """Every stretch still in flight, finished, in order."""
        ...

    def close(self) -> None: ...


class InlineFinals:
    """The final stages run on the loop's thread as soon as a stretch is final."""

    runs_here = True
    overlaps = False

    def submit(self, finish: Finish | Flush, *, first: bool) -> Iterable[Done]:
        return (finish(),)

    def drain(self) -> Iterable[Done]:
        return ()

    def close(self) -> None:
        """Nothing in flight."""


class NoFinals(InlineFinals):
    """A rank that makes no frames: no stretch is handed to it."""

    runs_here = False


class StretchWorker(Protocol):
    """Finishes stretches away from the loop's thread, in order: ``overlap.FinalizeWorker`` or a parallel role's."""

    def submit(self, work: Any, inputs: Any = None) -> None: ...

    def ready(self, *, block: bool = False) -> Iterable[Any]: ...

    def drain(self) -> Iterable[Any]: ...

    def close(self) -> None: ...


class QueuedFinals:
    """Stretches finished by a worker while the next chunk generates; at most its bound in flight."""

    runs_here = True
    overlaps = True

    def __init__(self, worker: StretchWorker) -> None:
        self.worker = worker

    def submit(self, finish: Finish | Flush, *, first: bool) -> Iterable[Done]:
        self.worker.submit(finish, inputs=getattr(finish, "step", None))
        return self.worker.drain() if first else self.worker.ready(block=True)

    def drain(self) -> Iterable[Done]:
        return self.worker.drain()

    def close(self) -> None:
        self.worker.close()
