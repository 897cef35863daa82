"""Execute: one scheduled chunk through the chunk stages, and its final stretches handed to the run's ``Finals``.

The chunk stages that read nothing an earlier chunk makes (context: audio
features, noise) can run a chunk ahead on a side thread while this chunk
generates (read-ahead, for sources that never make the loop wait); the rest
run once the previous chunks' latents exist. Each piece of the timeline the
chunk publishes becomes a ``Finish``: its latents, the video frames they
make, and the output audio that plays with them.
"""

from __future__ import annotations

import concurrent.futures
import functools
from collections.abc import Iterator
from concurrent.futures import Future
from typing import Any

import torch

from avatarstream.pipeline.audio_window import AudioWindow
from avatarstream.pipeline.chunks import Chunk, Piece
from avatarstream.pipeline.finals import Done, Finals, FinalStages, Finish, Flush
from avatarstream.pipeline.graph import with_next
from avatarstream.pipeline.loop_view import PipelineView
from avatarstream.pipeline.scheduler import Scheduler
from avatarstream.pipeline.stage_runner import StageRunner
from avatarstream.runtime.overlap import StreamWorker
from avatarstream.sources.audio_timeline import AudioTimeline

#: A chunk whose independent stages run ahead on the side thread, with their result to come.
Prepared = tuple[Chunk, Future[tuple[dict[str, Any], Any]]]


class ChunkExecutor:
    """Runs the chunk stages of each scheduled chunk and submits the stretches it makes final."""

    def __init__(
        self,
        pipeline: PipelineView,
        runner: StageRunner,
        scheduler: Scheduler,
        timeline: AudioTimeline,
        window: AudioWindow,
        finals: Finals,
        final: FinalStages,
    ) -> None:
        self.p, self.runner, self.scheduler = pipeline, runner, scheduler
        self.timeline, self.window = timeline, window
        self.finals, self.final = finals, final
        self.session = runner.session
        self.first_key = pipeline.plan.first().key  # the chunk whose stages condition on the reference
        self.next_publish = 0  # the first timeline frame not yet handed to the final stages
        self.submitted = 0  # stretches handed to the final stages
        reads_ahead = finals.overlaps and pipeline.read_ahead and bool(pipeline.independent)
        self.ahead: StreamWorker[dict[str, Any]] | None = StreamWorker(pipeline.runtime.ops, "ahead") if reads_ahead else None
        self.prepared: Prepared | None = None

    def execute(self, chunk: Chunk) -> Iterator[Done]:
        """Generate ``chunk`` and hand on each stretch it makes final; yields the stretches whose frames are ready."""
        step = self._take_prepared(chunk)
        self.prepared = self._prepare_ahead(self.p.plan.next_after(chunk))
        pieces = [p for p in (piece.clipped(self.scheduler.total_frames) for piece in chunk.publishes) if p is not None]
        latents = self._generate(chunk, step, publishes=bool(pieces) and self.finals.runs_here)
        for i, piece in enumerate(pieces if self.finals.runs_here else ()):
            finish = self._finisher(chunk, latents, piece, more_follow=i + 1 < len(pieces))
            self.submitted += 1
            yield from self.finals.submit(finish, first=self.next_publish == 0)
            self.next_publish = piece.end
        self.next_publish = pieces[-1].end if pieces else self.next_publish

    def drain(self) -> Iterator[Done]:
        """Every stretch still in flight; then, when the last final stage holds frames, the ones it still holds."""
        yield from self.finals.drain()
        if self.final.holds_frames and self.finals.runs_here and self.submitted:
            yield from self.finals.submit(Flush(self.final), first=False)
            yield from self.finals.drain()

    def release_audio(self, next_chunk: Chunk) -> None:
        """Drop audio that neither ``next_chunk``'s context nor pending output needs (once a read-ahead has read its part)."""
        if self.prepared is not None:
            concurrent.futures.wait([self.prepared[1]])
        frames = self.p.frames
        window_start = frames.window_video_range(next_chunk.window_start, next_chunk.window_end)[0]
        first_needed = min(window_start - self.p.audio_frames_before, frames.video_start(self.next_publish))
        first_needed = max(first_needed - 1, 0)
        self.timeline.model_track.discard_before(first_needed * self.window.samples_per_frame)
        self.timeline.output_track.discard_before(first_needed * self.p.output_sample_rate // self.p.fps)

    def close(self) -> None:
        if self.ahead is not None:
            self.ahead.shutdown()
        self.finals.close()

    def _take_prepared(self, chunk: Chunk) -> dict[str, Any]:
        if self.ahead is not None and self.prepared is not None and self.prepared[0] == chunk:
            return self.ahead.take(self.prepared[1])
        return self._prepare(chunk)

    def _prepare(self, chunk: Chunk) -> dict[str, Any]:
        """Run the chunk stages that need no earlier chunk's output (ContextGen: audio features, noise)."""
        step: dict[str, Any] = {"chunk": chunk, "audio": self.window}
        stages = self.p.independent
        self.runner.run_all(stages, step, self.p.phase("chunk")[len(stages)], chunk=chunk)
        return step

    def _prepare_ahead(self, chunk: Chunk) -> Prepared | None:
        """Prepare ``chunk`` on a side thread and stream while the current chunk generates (audio read ahead: file sources)."""
        if self.ahead is None or not self.scheduler.ready(chunk):
            return None
        return chunk, self.ahead.submit(functools.partial(self._prepare, chunk))

    def _generate(self, chunk: Chunk, step: dict[str, Any], *, publishes: bool) -> torch.Tensor:
        """The chunk stages after ``_prepare``'s, now that the previous chunks' latents exist."""
        first = chunk.key == self.first_key  # nothing generated yet: the stages condition on the reference
        step["conditioning"] = None if first or not chunk.cond_positions else self.session.held.frames(chunk.cond_frames)
        stages = self.p.phase("chunk")[len(self.p.independent) :]
        after = self.p.phase("final" if publishes else "chunk")[0]  # a chunk publishing nothing yet goes straight to the next chunk
        for stage, upcoming in with_next(stages, after):
            self.runner.run(stage, step, upcoming, chunk=chunk)
        latents: torch.Tensor = step["latents"]
        if chunk.held:
            self.session.held.put(chunk, latents)
        return latents

    def _finisher(self, chunk: Chunk, latents: torch.Tensor, piece: Piece, *, more_follow: bool) -> Finish:
        """Bind everything the final stages need now, so they can run later on another thread or rank."""
        source = latents if piece.source == chunk.key else self.session.held.latents_of(piece.source)
        step: dict[str, Any] = {
            "latents": source[:, :, piece.offset : piece.offset + piece.end - piece.start],
            "frames_range": (piece.start, piece.end),
            "window_latents": source,  # the whole generated window, for final stages that decode it anew (not sent to a decode rank)
            "window_offset": piece.offset,
        }
        first, end = self.p.frames.video_range(piece.start, piece.end)
        count = end - first  # what the final stages make of these latents
        total_video = self.scheduler.total_video
        keep = count if total_video is None else min(end, total_video) - first  # a last chunk is trimmed
        rate, fps = self.p.output_sample_rate, self.p.fps
        audio = self.timeline.output_track.read(first * rate // fps, (first + keep) * rate // fps)
        after = self.p.phase("final")[0] if more_follow else self.p.phase("chunk")[0]
        return Finish(self.final, chunk, piece, step, after, first, count, keep, audio)
