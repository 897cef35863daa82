"""Emit: finished frames out, and at each chunk boundary the observers' news and the resumable state.

The emitter is the loop's third part (schedule, execute, emit). It yields each
finished stretch's frames with the audio that plays with them, tells the
observers, weighs (and, for observers that want it, takes) the state at each
chunk boundary, and hands that state on only once the frames before the
boundary are out (``Handover``), so a resumed run continues exactly where the
published video stops.
"""

from __future__ import annotations

import dataclasses
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from avatarstream.pipeline.chunks import Chunk
from avatarstream.pipeline.finals import Done, FinalStages
from avatarstream.pipeline.loop_view import PipelineView
from avatarstream.pipeline.observer import ChunkDone, RunObserver
from avatarstream.pipeline.resume import Resumable, StageParts, nbytes_of, stage_parts, to_host
from avatarstream.pipeline.scheduler import Scheduler
from avatarstream.pipeline.stage_runner import StageRunner
from avatarstream.publish.media import MediaChunk
from avatarstream.sources.audio_timeline import AudioTimeline


class Emitter:
    """Publishes a run's frames and reports its chunk boundaries."""

    def __init__(self, pipeline: PipelineView, runner: StageRunner, timeline: AudioTimeline, scheduler: Scheduler, final: FinalStages) -> None:
        self.p, self.timeline, self.scheduler, self.final = pipeline, timeline, scheduler, final
        self.session, self.observers, self.now = runner.session, runner.observers, runner.now
        self.savers = [obs for obs in self.observers if obs.wants_resumable]
        self.handover: Handover | None = None
        self.host_values: dict[str, object] | None = None  # the init outputs as a resumable state holds them
        self._values_bytes: int | None = None

    def start(self) -> None:
        for obs in self.observers:
            obs.on_start()

    def open_handover(self) -> None:
        """The chunk loop starts: the final stages' parts are nothing, or what a resumed run restored."""
        final = self.final.parts()
        self.handover = Handover(self.savers, final) if self.savers else None  # states wait there for their frames

    def publish(self, finished: Iterable[Done]) -> Iterator[MediaChunk]:
        """Yield each finished stretch's frames; once they are taken, the states waiting for them may be whole."""
        for done in finished:
            if done.media is not None:  # None: a stage holding frames gave none out of this stretch yet
                for obs in self.observers:
                    obs.on_frames(done.media.first_frame, done.media.num_frames, self.now())
                yield done.media
            if self.handover is not None:
                self.handover.stretch_out(done.final)

    def chunk_done(self, chunk: Chunk, next_chunk: Chunk, seconds: tuple[float, float], next_publish: int, submitted: int) -> None:
        """``chunk`` ran (``seconds``: its start and end on the run's clock); ``next_chunk`` is next, and the timeline is
        handed to the final stages up to ``next_publish`` in ``submitted`` stretches."""
        start, end = self.p.frames.video_range(*chunk.contributes)
        total_video = self.scheduler.total_video
        end = end if total_video is None else min(end, total_video)
        # the state at this boundary: never waits for the final stages still running; it is handed on once they are out
        state, nbytes = self._boundary(next_chunk, next_publish)
        for obs in self.observers:
            obs.on_chunk(ChunkDone(chunk, (start, max(end, start)), *seconds, nbytes))
        if self.handover is not None and state is not None:
            self.handover.boundary(state, submitted)

    def end(self) -> None:
        for obs in self.observers:
            obs.on_end(self.scheduler.total_video or 0, self.timeline.duration_s, self.now())

    def _boundary(self, chunk: Chunk, next_publish: int) -> tuple[Resumable | None, int]:
        """The state before ``chunk`` but for the final stages' parts (taken only when observers want it), and what the whole state weighs.

        The init and chunk stages' parts are asked for here, on the loop thread; the final stages' where they run."""
        early = stage_parts((*self.p.phase("init"), *self.p.phase("chunk")), self.session.caches, take=bool(self.savers))
        if self._values_bytes is None:  # the init outputs never change: weighed (and copied to the host) once
            self._values_bytes = nbytes_of(self.session.values)
        nbytes = self._values_bytes + self.session.held.nbytes() + early.nbytes + self.final.nbytes + self.timeline.nbytes
        if not self.savers:
            return None, nbytes
        if self.host_values is None:
            self.host_values = to_host(self.session.values)
        state = Resumable(
            next_chunk=chunk.key,
            next_publish=next_publish,
            published_frames=self.p.frames.video_range(0, next_publish)[1] if next_publish else 0,
            values=self.host_values,
            held={key: to_host(latents) for key, latents in self.session.held.by_key().items()},
            caches=early.parts or {},
            audio=self.timeline.snapshot(),
            seed=self.session.seed,
        )
        return state, nbytes


@dataclass(frozen=True)
class _Boundary:
    state: Resumable  # its caches: the init and chunk stages' parts
    finishes: int  # stretches whose frames must be out before it is whole


class Handover:
    """Hands each chunk boundary's state to the observers once the frames before the boundary are out.

    The final stages of a boundary's last stretches may still be running on
    the finalize worker when the loop passes the boundary; nothing waits for
    them. Each boundary waits here for its count of finished stretches, whose
    final stages' parts (taken right after they ran) complete it. A boundary
    that needs no more stretches than the one before it replaces that one
    (both would be whole at the same moment), so at most one state waits per
    stretch in flight.
    """

    def __init__(self, observers: Sequence[RunObserver], final: StageParts) -> None:
        self._observers = observers
        self._final = final  # the final stages' parts after the last stretch out (or as the run started)
        self._out = 0
        self._waiting: deque[_Boundary] = deque()

    def boundary(self, state: Resumable, finishes: int) -> None:
        """A chunk boundary, after ``finishes`` stretches of this run were handed to the final stages."""
        if self._waiting and self._waiting[-1].finishes == finishes:
            self._waiting.pop()
        self._waiting.append(_Boundary(state, finishes))
        self._hand_over()

    def stretch_out(self, final: StageParts) -> None:
        """The next stretch's frames were handed on; ``final``: the final stages' parts right after they made them."""
        self._out += 1
        self._final = final
        self._hand_over()

    def __len__(self) -> int:
        return len(self._waiting)

    def _hand_over(self) -> None:
        while self._waiting and self._waiting[0].finishes <= self._out:
            state = self._waiting.popleft().state
            whole = dataclasses.replace(state, caches={**state.caches, **(self._final.parts or {})})
            for obs in self._observers:
                obs.on_resumable(whole)
