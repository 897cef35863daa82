"""Pipeline: the execution graph and the chunk loop (DESIGN.md §3–5).

Init stages run once per request; then, for every chunk of the plan (the
family's: ``pipeline.plan.Plan``), the chunk stages generate latents, and
every stretch of latents that became final runs through the final stages
(super-resolution, decode) and is yielded as frames with the audio that plays
with them. Batch and streaming share this one loop: a file is just an audio
source that never makes the loop wait.

Several processes can run one session (``--parallel``): rank 0 calls
``stream`` and the others ``follow``. Rank 0 hands each run's inputs and audio
to the others host-side and opens each chunk for them; the generating ranks
run the chunk stages together (their collectives split each forward, or,
under ``steps=N``, each runs its step of every block), and a decode rank, when
there is one, runs the final stages of the stretches rank 0 (or the last
step's rank) sends it while the next chunk generates.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import functools
import math
import time
import weakref
from collections.abc import AsyncGenerator, AsyncIterable, Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from avatarstream.errors import InputError, PipelineGraphError
from avatarstream.pipeline.aio import astream
from avatarstream.pipeline.chunks import Chunk, FrameLayout, Piece
from avatarstream.pipeline.observer import ChunkDone, RunObserver, StageSpan
from avatarstream.pipeline.plan import Plan
from avatarstream.pipeline.resume import Handover, Resumable, StageParts, nbytes_of, stage_parts, to_device, to_host
from avatarstream.pipeline.stage import PHASES, Phase, Stage
from avatarstream.pipeline.state import HeldLatents, SessionState, StageContext
from avatarstream.publish.media import MediaChunk
from avatarstream.runtime.compiled import DEFAULT_BACKEND
from avatarstream.runtime.overlap import FinalizeWorker, StreamWorker
from avatarstream.runtime.parallel.guard import DecodeGate, FollowGate, LeadGate, follower_gate, stops_every_rank
from avatarstream.runtime.parallel.stage_pipe import Decoded, FinalLatentsHandOn, RemoteFinalizer, Stretch, receive_stretches, send_decoded
from avatarstream.runtime.residency import Runtime
from avatarstream.sources.audio_timeline import AudioTimeline, SampleTrack
from avatarstream.sources.pcm import PcmBlock

#: Values the pipeline itself provides to each phase.
PROVIDED: dict[Phase, frozenset[str]] = {
    "init": frozenset({"reference_image", "prompt"}),
    "chunk": frozenset({"chunk", "audio", "conditioning"}),
    "final": frozenset({"latents", "frames_range", "window_latents", "window_offset"}),
}
#: Values each phase must produce for the loop to continue.
REQUIRED: dict[Phase, frozenset[str]] = {"init": frozenset(), "chunk": frozenset({"latents"}), "final": frozenset({"frames"})}


@dataclass(frozen=True)
class AudioWindow:
    """Read-only view of the model's audio track, addressed by video frame.

    ``frames`` maps the chunks' timeline frames to video frames; ``total_frames``
    is the audio's length in video frames once the stream has ended (None while
    it is live), for models that treat the end of the audio specially.
    """

    track: SampleTrack
    samples_per_frame: int
    frames: FrameLayout = FrameLayout()
    ended_at: Callable[[], int | None] = lambda: None

    @property
    def total_frames(self) -> int | None:
        return self.ended_at()

    def read(self, first_frame: int, end_frame: int) -> np.ndarray:
        """Mono samples of frames ``[first_frame, end_frame)``; silence outside the audio."""
        mono: np.ndarray = self.track.read(first_frame * self.samples_per_frame, end_frame * self.samples_per_frame)[0]
        return mono


class Pipeline:
    """Runs a validated stage graph over a chunk plan. Model-agnostic."""

    def __init__(
        self,
        stages: Sequence[Stage],
        plan: Plan,
        runtime: Runtime,
        *,
        fps: int,
        model_sample_rate: int,
        output_sample_rate: int = 48000,
        output_channels: int = 2,
        overlap: bool = False,
        read_ahead: bool = False,
        frames: FrameLayout = FrameLayout(),
        video_frames: Callable[[float], int] | None = None,
    ) -> None:
        if model_sample_rate % fps:
            raise PipelineGraphError(f"model sample rate {model_sample_rate} is not a whole number of samples per frame at {fps} fps")
        self.stages = tuple(stages)
        self.plan = plan
        self.frames = frames  # timeline (latent) frames -> video frames
        # how many video frames audio of a duration (seconds) makes: round(duration x fps) unless the family counts otherwise
        self.video_frames = video_frames or (lambda duration_s: round(duration_s * fps))
        self.runtime = runtime
        self.fps = fps
        self.model_sample_rate = model_sample_rate
        self.output_sample_rate = output_sample_rate
        self.output_channels = output_channels
        self._by_phase = {phase: tuple(s for s in self.stages if s.phase == phase) for phase in PHASES}
        validate_graph(self.stages)
        runtime.bind(m for stage in self.stages for m in stage.modules())  # config errors and weight packing now, not mid-request
        # finish chunk k on a worker while chunk k+1 generates, unless a policy needs one sequence of stages (sharded)
        # or a module serves both phases: the runtime would release it on one thread while the other still runs it
        shared = {m.name for s in self._by_phase["chunk"] for m in s.modules()} & {m.name for s in self._by_phase["final"] for m in s.modules()}
        self.overlap = overlap and not runtime.sequential_only and not shared
        # followers skip the final stages unless a module there needs every rank's forwards (sharded)
        collective_finals = any(runtime.residency(m).sequential_only for s in self._by_phase["final"] for m in s.modules())
        self.followers_finish = collective_finals and runtime.parallel.layout.decode_rank is None
        # with overlap: read the next chunk's audio early and prepare it while this one generates.
        # Only for sources that never block (files): a live source would hold this chunk back.
        self.read_ahead = read_ahead
        self._independent = independent_prefix(self._by_phase["chunk"])
        contexts = [s.audio_context_frames() for s in self.stages] or [(0, 0)]
        self.audio_frames_before = max(c[0] for c in contexts)
        self.audio_frames_after = max(c[1] for c in contexts)
        self.whole_audio = any(s.needs_whole_audio for s in self.stages)

    @property
    def chunk_seconds(self) -> float:
        """Seconds of video one chunk in the steady state (after the first) adds to the timeline."""
        first, end = self.frames.video_range(*self.plan.steady_frames())
        return (end - first) / self.fps

    @property
    def device(self) -> torch.device:
        return self.runtime.device

    def compile(self, backend: str = DEFAULT_BACKEND) -> list[str]:
        """Compile the transformer blocks of this pipeline's DiTs (``--compile``): each graph once per shape, during the
        first chunks of the first run; the report's ``runtime.compile_s`` says how long that took. Returns the modules compiled."""
        return self.runtime.compile(backend)

    def prepare(self) -> None:
        """Let the runtime put every module where its policy wants it before the first request."""
        for stage in self.stages:
            self.runtime.acquire(stage.modules())
            self.runtime.release(stage.modules())

    # -- the loop -------------------------------------------------------------------------------

    def stream(
        self,
        audio: Iterable[PcmBlock],
        reference_image: Any,
        prompt: str = "",
        *,
        seed: int = 0,
        observers: Sequence[RunObserver] = (),
        resume: Resumable | None = None,
    ) -> Iterator[MediaChunk]:
        """Yield final frames with their audio as soon as they exist; audio may arrive live.

        ``resume``: carry on a run from its state (observers that want it get one per chunk boundary, once the frames before
        it are out); the audio is what follows the state's, and the frames continue its timeline. With several processes
        only rank 0 calls it; the others call ``follow``.
        """
        groups = self.runtime.parallel
        if not groups.distributed:
            yield from _Run(self, iter(audio), seed, observers).execute(reference_image, prompt, resume)
            return
        if resume is not None:
            raise InputError("a run split over several processes (--parallel) cannot be resumed from a saved state; run it on one")
        if groups.role != "lead":
            raise PipelineGraphError(f"rank {groups.rank} follows rank 0's runs: call follow(), not stream()")
        with stops_every_rank(groups):
            gate = LeadGate.announce(groups, np.asarray(reference_image), prompt, seed)
            run = _Run(self, gate.relay(iter(audio)), seed, observers, gate)
            yield from run.execute(reference_image, prompt)

    def follow(self) -> None:
        """The other ranks' part of every run rank 0 streams, until rank 0 shuts the group down."""
        groups = self.runtime.parallel
        assert groups.control is not None and groups.role != "lead", "follow() is for the ranks after 0 of a parallel run"
        with stops_every_rank(groups):
            for command in groups.control.commands():
                gate = follower_gate(groups, command.run)
                if groups.role == "decode":
                    _Run(self, iter(()), command.seed, (), gate).serve_finals(command.reference_image, command.prompt)
                else:
                    for _ in _Run(self, groups.control.audio(command.run), command.seed, (), gate).execute(command.reference_image, command.prompt):
                        pass

    def astream(
        self,
        audio: AsyncIterable[PcmBlock],
        reference_image: Any,
        prompt: str = "",
        *,
        seed: int = 0,
        observers: Sequence[RunObserver] = (),
        resume: Resumable | None = None,
    ) -> AsyncGenerator[MediaChunk, None]:
        """Async twin of ``stream`` for live sources (sockets, agents); see ``pipeline.aio``."""
        return astream(self, audio, reference_image, prompt, seed=seed, observers=observers, resume=resume)


def _total_video_of(run: weakref.ref[_Run]) -> Callable[[], int | None]:
    """The run's video length once its audio has ended, read without a reference cycle: an ended run (its latents, caches and
    resamplers) is freed at once, not when the cyclic garbage collector next runs, which on a busy server can be many sessions later."""
    return lambda: getattr(run(), "total_video", None)


class _Run:
    """One request through the pipeline: owns the session state and the audio timeline."""

    def __init__(
        self, pipeline: Pipeline, audio: Iterator[PcmBlock], seed: int, observers: Sequence[RunObserver], gate: LeadGate | FollowGate | DecodeGate | None = None
    ) -> None:
        self.p = pipeline
        pipeline.runtime.ops.fit_threads()  # CPU: every core on a quiet machine, one beside another busy program
        self.gate: LeadGate | FollowGate | DecodeGate | None = gate  # opens each chunk for the others (rank 0) or waits for it (followers)
        self.audio = audio
        self.observers = observers
        self.session = SessionState(seed=seed, held=HeldLatents(pipeline.plan.max_held))
        self.timeline = AudioTimeline(pipeline.model_sample_rate, pipeline.output_sample_rate, pipeline.output_channels)
        self.window = AudioWindow(self.timeline.model_track, pipeline.model_sample_rate // pipeline.fps, pipeline.frames, _total_video_of(weakref.ref(self)))
        self.t0 = time.perf_counter()
        self.total_frames: int | None = None  # timeline frames, once the audio has ended
        self.total_video: int | None = None  # video frames: round(duration x fps)
        self._host_values: dict[str, Any] | None = None  # the init outputs as a resumable state holds them
        self._values_bytes: int | None = None
        self._first = pipeline.plan.first().key  # the chunk whose stages condition on the reference
        self.savers = [obs for obs in observers if obs.wants_resumable]
        self._final_bytes = 0  # what the final stages' resume parts weighed after they last ran (set where they run)

    def now(self) -> float:
        return time.perf_counter() - self.t0

    def execute(self, reference_image: Any, prompt: str, resume: Resumable | None = None) -> Iterator[MediaChunk]:
        for obs in self.observers:
            obs.on_start()
        if resume is None:
            self._run_init(reference_image, prompt, self.p._by_phase["chunk"][0])
        else:
            self._restore(resume)
        worker = self._finalizer()
        try:
            yield from self._chunk_loop(worker, resume)
            if self.gate is not None:
                self.gate.end()  # a follower reads rank 0's stop for the chunk after the last
        finally:
            if worker is not None:
                worker.close()
            self.p.runtime.ops.restore_threads()
            if isinstance(self.gate, LeadGate):
                with contextlib.suppress(Exception):  # failing: the store may be gone, and the failure is what matters
                    self.gate.end()
        for obs in self.observers:
            obs.on_end(self.total_video or 0, self.timeline.duration_s, self.now())

    def _run_init(self, reference_image: Any, prompt: str, after: Stage) -> None:
        self.session.values.update(reference_image=reference_image, prompt=prompt)
        for stage, upcoming in with_next(self.p._by_phase["init"], after):
            self._run_stage(stage, self.session.values, upcoming)

    def _finalizer(self) -> _Finalizer | None:
        """Where final stages run: on the decode rank, on a worker thread (overlap), or inline (None); under ``steps=N`` where
        the last step's rank hands its final latents (the lead collects the frames)."""
        groups = self.p.runtime.parallel
        layout = groups.layout
        if layout.steps > 1 and (isinstance(self.gate, LeadGate) or groups.holds_final_latents):
            assert groups.control is not None and groups.from_decoder is not None, "a steps layout has its groups"
            if groups.holds_final_latents:
                return FinalLatentsHandOn(groups.to_decoder, groups.from_decoder, layout.finishing_rank, self.p.device)
            assert isinstance(self.gate, LeadGate)
            in_flight = layout.steps + 2  # a block's frames come back once every step (and the decode) is done: the lead runs ahead
            return RemoteFinalizer(groups.control, self.gate.run, None, groups.from_decoder, layout.finishing_rank, self.p.runtime.ops, in_flight,
                                   announce=layout.decode)  # fmt: skip
        if isinstance(self.gate, LeadGate) and layout.decode_rank is not None:
            assert groups.control is not None and groups.to_decoder is not None and groups.from_decoder is not None, "a decode rank has its groups"
            return RemoteFinalizer(groups.control, self.gate.run, groups.to_decoder, groups.from_decoder, layout.decode_rank, self.p.runtime.ops)
        return FinalizeWorker(self.p.runtime.ops) if self.p.overlap and (self.gate is None or isinstance(self.gate, LeadGate)) else None

    @property
    def _finishes(self) -> bool:
        """Whether this rank runs the final stages (rank 0 always, by itself or through the decode rank)."""
        return self.gate is None or isinstance(self.gate, LeadGate) or self.p.followers_finish or self.p.runtime.parallel.holds_final_latents

    def serve_finals(self, reference_image: Any, prompt: str) -> None:
        """The decode rank's run: the init stages (final stages read their values), then every stretch rank 0 sends."""
        groups = self.p.runtime.parallel
        assert groups.control is not None and groups.to_decoder is not None and groups.from_decoder is not None, "a decode rank has its groups"
        assert isinstance(self.gate, DecodeGate), "the decode rank's run has its gate"
        stages = self.p._by_phase["final"]
        self._run_init(reference_image, prompt, stages[0])
        source = groups.layout.last_step_rank  # whoever holds the final latents: rank 0, or the last step's under steps=N
        for stretch in receive_stretches(groups.control, self.gate.run, groups.to_decoder, self.p.device, source):
            step: dict[str, Any] = {"latents": stretch.latents, "frames_range": stretch.frames_range}
            send_decoded(self.run_finals(step, stages[0], None, stretch.frames_range), groups.from_decoder, self.p.device)

    def run_finals(self, step: dict[str, Any], after: Stage, chunk: Chunk | None, frames: tuple[int, int]) -> Decoded:
        """The final stages on ``step`` here, their frames on the host with each stage's seconds (to publish elsewhere)."""
        seconds = []
        for stage, upcoming in with_next(self.p._by_phase["final"], after):
            start = self.now()
            self._run_stage(stage, step, upcoming, chunk=chunk, frames=frames)
            seconds.append(self.now() - start)
        return Decoded(self.p.runtime.ops.to_host(step["frames"]), seconds)

    def _restore(self, state: Resumable) -> None:
        """Put a saved run's values, latents, stage caches and audio in place of the init stages' work."""
        device, stages = self.p.device, {stage.name: stage for stage in self.p.stages}
        unknown = sorted(set(state.caches) - set(stages))
        if unknown:
            raise InputError(
                f"the saved state holds the caches of stages {unknown}, which this pipeline does not have: resume it with the pipeline that saved it"
            )
        self.session = SessionState(seed=state.seed, values=to_device(state.values, device), held=HeldLatents(self.p.plan.max_held))
        for name, part in state.caches.items():
            cache = stages[name].restore_cache(to_device(part, device))
            if cache is not None:
                self.session.caches[name] = cache
        for key, latents in state.held.items():  # oldest first, as they were held
            self.session.held.put(self.p.plan.chunk(key), latents.to(device))
        self.timeline.restore(state.audio)
        self._host_values = state.values

    def _boundary(self, chunk: Chunk, next_publish: int) -> tuple[Resumable | None, int]:
        """The state before ``chunk`` but for the final stages' parts (taken only when observers want it), and what the whole state weighs.

        The init and chunk stages' parts are asked for here, on the loop thread; the final stages' where they run."""
        early = stage_parts((*self.p._by_phase["init"], *self.p._by_phase["chunk"]), self.session.caches, take=bool(self.savers))
        if self._values_bytes is None:  # the init outputs never change: weighed (and copied to the host) once
            self._values_bytes = nbytes_of(self.session.values)
        nbytes = self._values_bytes + self.session.held.nbytes() + early.nbytes + self._final_bytes + self.timeline.nbytes
        if not self.savers:
            return None, nbytes
        if self._host_values is None:
            self._host_values = to_host(self.session.values)
        state = Resumable(
            next_chunk=chunk.key,
            next_publish=next_publish,
            published_frames=self.p.frames.video_range(0, next_publish)[1] if next_publish else 0,
            values=self._host_values,
            held={key: to_host(latents) for key, latents in self.session.held.by_key().items()},
            caches=early.parts or {},
            audio=self.timeline.snapshot(),
            seed=self.session.seed,
        )
        return state, nbytes

    def _final_parts(self) -> StageParts:
        """The final stages' resume parts as they stand (right after they ran); weighed always, taken when observers want states."""
        parts = stage_parts(self.p._by_phase["final"], self.session.caches, take=bool(self.savers))
        self._final_bytes = parts.nbytes
        return parts

    def _chunk_loop(self, worker: _Finalizer | None, resume: Resumable | None) -> Iterator[MediaChunk]:
        plan = self.p.plan
        chunk = plan.first() if resume is None else plan.chunk(resume.next_chunk)
        next_publish = 0 if resume is None else resume.next_publish
        final = self._final_parts()  # as the run starts: nothing, or what a resumed run restored
        handover = Handover(self.savers, final) if self.savers else None  # states wait there for their frames
        submitted = 0  # stretches handed to the final stages
        ahead: StreamWorker[dict[str, Any]] | None = StreamWorker(self.p.runtime.ops, "ahead") if self._reads_ahead(worker) else None
        prepared: tuple[Chunk, Future[tuple[dict[str, Any], Any]]] | None = None
        try:
            while True:
                self._wait_for_audio(chunk)
                if self.total_frames is not None and self.p.plan.is_past_end(chunk, self.total_frames):
                    break
                if self.gate is not None and not self.gate.chunk_starts():
                    break  # rank 0 stopped the run
                start_s = self.now()
                step = ahead.take(prepared[1]) if ahead is not None and prepared is not None and prepared[0] == chunk else self._prepare(chunk)
                prepared = self._prepare_ahead(ahead, self.p.plan.next_after(chunk))
                pieces = [p for p in (piece.clipped(self.total_frames) for piece in chunk.publishes) if p is not None]
                latents = self._generate(chunk, step, publishes=bool(pieces) and self._finishes)
                for i, piece in enumerate(pieces if self._finishes else ()):
                    finish = self._finisher(chunk, latents, piece, more_follow=i + 1 < len(pieces))
                    submitted += 1
                    if worker is None:
                        yield from self._out(finish(), handover)
                    else:
                        worker.submit(finish, inputs=finish.step)
                        # the very first frames are waited for: time to first frame beats overlap
                        for done in worker.drain() if next_publish == 0 else worker.ready(block=True):
                            yield from self._out(done, handover)
                    next_publish = piece.end
                next_publish = pieces[-1].end if pieces else next_publish
                start, end = self.p.frames.video_range(*chunk.contributes)
                end = end if self.total_video is None else min(end, self.total_video)
                done_chunk, timeline, end_s = chunk, (start, max(end, start)), self.now()
                chunk = self.p.plan.next_after(chunk)
                if prepared is not None:
                    concurrent.futures.wait([prepared[1]])  # it reads the audio that is about to be trimmed
                self._discard_audio(chunk, next_publish)
                # the state at this boundary: never waits for the final stages still running; it is handed on once they are out
                state, nbytes = self._boundary(chunk, next_publish)
                for obs in self.observers:
                    obs.on_chunk(ChunkDone(done_chunk, timeline, start_s, end_s, nbytes))
                if handover is not None and state is not None:
                    handover.boundary(state, submitted)
                self.p.runtime.ops.release_host_memory()  # CPU: what this chunk freed leaves RSS now, whichever thread's arena holds it
                self.p.runtime.ops.fit_threads()
            if worker is not None:
                for done in worker.drain():
                    yield from self._out(done, handover)
        finally:
            if ahead is not None:
                ahead.shutdown()

    def _reads_ahead(self, worker: _Finalizer | None) -> bool:
        return worker is not None and self.p.read_ahead and bool(self.p._independent)

    def _prepare(self, chunk: Chunk) -> dict[str, Any]:
        """Run the chunk stages that need no earlier chunk's output (ContextGen: audio features, noise)."""
        step: dict[str, Any] = {"chunk": chunk, "audio": self.window}
        stages = self.p._independent
        for stage, upcoming in with_next(stages, self.p._by_phase["chunk"][len(stages)]):
            self._run_stage(stage, step, upcoming, chunk=chunk)
        return step

    def _prepare_ahead(self, ahead: StreamWorker[dict[str, Any]] | None, chunk: Chunk) -> tuple[Chunk, Future[tuple[dict[str, Any], Any]]] | None:
        """Prepare ``chunk`` on a side thread and stream while the current chunk generates (audio read ahead: file sources)."""
        if ahead is None:
            return None
        self._wait_for_audio(chunk)
        if self.total_frames is not None and self.p.plan.is_past_end(chunk, self.total_frames):
            return None
        return chunk, ahead.submit(functools.partial(self._prepare, chunk))

    def _wait_for_audio(self, chunk: Chunk) -> None:
        """Pull audio until the chunk's window (plus look-ahead) is readable or the stream ends."""
        need_s = math.inf if self.p.whole_audio else (self.p.frames.video_start(chunk.window_end) + self.p.audio_frames_after) / self.p.fps
        while not self.timeline.ended and self.timeline.available_s() < need_s:
            block = next(self.audio, None)
            if block is None:
                self.timeline.end()
            else:
                self.timeline.push(block)
        if self.timeline.ended and self.total_frames is None:
            self.total_video = self.p.video_frames(self.timeline.duration_s)
            self.total_frames = self.p.frames.timeline_frames(self.total_video)
            if self.total_video == 0:
                raise InputError(
                    f"the audio is too short to make a single frame ({self.timeline.duration_s * 1000:.1f} ms); "
                    f"give at least {1000 / self.p.fps / 2:.0f} ms of audio"
                )

    def _generate(self, chunk: Chunk, step: dict[str, Any], *, publishes: bool) -> torch.Tensor:
        """The chunk stages after ``_prepare``'s, now that the previous chunks' latents exist."""
        first = chunk.key == self._first  # nothing generated yet: the stages condition on the reference
        step["conditioning"] = None if first or not chunk.cond_positions else self.session.held.frames(chunk.cond_frames)
        stages = self.p._by_phase["chunk"][len(self.p._independent) :]
        after = self.p._by_phase["final" if publishes else "chunk"][0]  # a chunk publishing nothing yet goes straight to the next chunk
        for stage, upcoming in with_next(stages, after):
            self._run_stage(stage, step, upcoming, chunk=chunk)
        latents: torch.Tensor = step["latents"]
        if chunk.held:
            self.session.held.put(chunk, latents)
        return latents

    def _finisher(self, chunk: Chunk, latents: torch.Tensor, piece: Piece, *, more_follow: bool) -> _Finish:
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
        keep = count if self.total_video is None else min(end, self.total_video) - first  # a last chunk is trimmed
        rate, fps = self.p.output_sample_rate, self.p.fps
        audio = self.timeline.output_track.read(first * rate // fps, (first + keep) * rate // fps)
        after = self.p._by_phase["final"][0] if more_follow else self.p._by_phase["chunk"][0]
        return _Finish(self, chunk, piece, step, after, first, count, keep, audio)

    def _emit(self, media: MediaChunk) -> MediaChunk:
        for obs in self.observers:
            obs.on_frames(media.first_frame, media.num_frames, self.now())
        return media

    def _out(self, done: _Done, handover: Handover | None) -> Iterator[MediaChunk]:
        """Yield a finished stretch's frames; once they are taken, the states waiting for them may be whole."""
        yield self._emit(done.media)
        if handover is not None:
            handover.stretch_out(done.final)

    def _discard_audio(self, next_chunk: Chunk, next_publish: int) -> None:
        """Drop audio that neither the next chunk's context nor pending output needs."""
        frames = self.p.frames
        window_start = frames.window_video_range(next_chunk.window_start, next_chunk.window_end)[0]
        first_needed = min(window_start - self.p.audio_frames_before, frames.video_start(next_publish))
        first_needed = max(first_needed - 1, 0)
        self.timeline.model_track.discard_before(first_needed * self.window.samples_per_frame)
        self.timeline.output_track.discard_before(first_needed * self.p.output_sample_rate // self.p.fps)

    def _run_stage(self, stage: Stage, values: dict[str, Any], upcoming: Stage, *, chunk: Chunk | None = None, frames: tuple[int, int] | None = None) -> None:
        """Run one stage between the runtime's start/end calls; ``upcoming`` is what runs next."""
        runtime = self.p.runtime
        start_s = self.now()
        runtime.stage_starts(stage.name, stage.modules(), upcoming.modules())
        with torch.inference_mode():
            stage.run(StageContext(self.session, stage.name, values))
        runtime.stage_ends(stage.name, stage.modules())  # no device sync: the next stage's work queues behind this one's
        missing = [name for name in stage.writes if name not in values]
        if missing:
            raise PipelineGraphError(f"stage {stage.name!r} declared it writes {missing} but did not")
        span = StageSpan(stage.name, stage.phase, start_s, self.now(), chunk, frames)
        for obs in self.observers:
            obs.on_stage(span)


@dataclass(frozen=True)
class _Done:
    """A finished stretch: its frames, and the final stages' resume parts right after they made them."""

    media: MediaChunk
    final: StageParts


#: Where a run's final stages go: a local worker, the lead's side of a decode rank (or of the last step's), the last step's side.
_Finalizer = FinalizeWorker[_Done] | RemoteFinalizer | FinalLatentsHandOn

#: The decode rank's final stages keep their caches there: a run split over processes is not resumed (``stream`` refuses it).
_ELSEWHERE = StageParts({}, 0)


@dataclass
class _Finish:
    """One stretch of final latents and what its frames are published with; run here (``__call__``) or elsewhere (``stretch``)."""

    run: _Run
    chunk: Chunk
    piece: Piece
    step: dict[str, Any]
    after: Stage  # what runs once the final stages are done
    first: int
    count: int
    keep: int
    audio: np.ndarray

    def __call__(self) -> _Done:
        stages = self.run.p._by_phase["final"]
        for stage, upcoming in with_next(stages, self.after):
            self.run._run_stage(stage, self.step, upcoming, chunk=self.chunk, frames=(self.piece.start, self.piece.end))
        return _Done(
            self._media(self.run.p.runtime.ops.to_host(self.step["frames"])), self.run._final_parts()
        )  # on the thread that ran them, before the next stretch

    @property
    def stretch(self) -> Stretch:
        return Stretch(self.step["latents"], (self.piece.start, self.piece.end), self.chunk.key)

    def decoded(self) -> Decoded:
        """The final stages run here for another rank to publish (the last step's rank under ``steps=N``, no decode rank)."""
        return self.run.run_finals(self.step, self.after, self.chunk, (self.piece.start, self.piece.end))

    def complete(self, decoded: Decoded) -> _Done:
        """The frames the decode rank made, with the spans of its stages (ending now, on this rank's clock)."""
        end = self.run.now()
        stages = self.run.p._by_phase["final"]
        for stage, seconds in zip(reversed(stages), reversed(decoded.stage_seconds), strict=False):
            span = StageSpan(stage.name, stage.phase, end - seconds, end, self.chunk, (self.piece.start, self.piece.end))
            for obs in self.run.observers:
                obs.on_stage(span)
            end -= seconds
        return _Done(self._media(decoded.frames), _ELSEWHERE)

    def _media(self, frames: np.ndarray) -> MediaChunk:
        if frames.shape[0] != self.count:
            raise PipelineGraphError(f"final stages returned {frames.shape[0]} frames for a stretch of {self.count}")
        return MediaChunk(self.first, frames[: self.keep], self.audio)


def with_next(stages: Sequence[Stage], after: Stage) -> Iterator[tuple[Stage, Stage]]:
    """Each stage with the one that runs after it (``after`` after the last), for the runtime's hints; none for no stages."""
    return zip(stages, (*stages[1:], after)[: len(stages)], strict=True)


def independent_prefix(chunk_stages: Sequence[Stage]) -> tuple[Stage, ...]:
    """The leading chunk stages that read nothing an earlier chunk produces (so they can run a chunk ahead).

    ``conditioning`` and the outputs of later chunk stages depend on the
    previous chunk; init values, ``chunk`` and ``audio`` do not.
    """
    per_chunk = {"conditioning"} | {w for stage in chunk_stages for w in stage.writes}
    ready: set[str] = set()
    prefix: list[Stage] = []
    for stage in chunk_stages[:-1]:  # the last chunk stage makes the latents: never ahead
        if not (set(stage.reads) & per_chunk) <= ready:
            break
        prefix.append(stage)
        ready |= set(stage.writes)
    return tuple(prefix)


def validate_graph(stages: Sequence[Stage]) -> None:
    """Check that every read has an earlier writer; raise a message that says how to fix it."""
    names = [s.name for s in stages]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise PipelineGraphError(f"stage names must be unique, found {duplicates} more than once")
    unknown = [s for s in stages if s.phase not in PHASES]
    if unknown:
        raise PipelineGraphError(f"stage {unknown[0].name!r} has unknown phase {unknown[0].phase!r}; use one of {PHASES}")
    init_values: set[str] = set(PROVIDED["init"])
    for phase in PHASES:
        available = set(PROVIDED[phase]) | init_values
        for stage in (s for s in stages if s.phase == phase):
            missing = [r for r in stage.reads if r not in available]
            if missing:
                raise PipelineGraphError(
                    f"stage {stage.name!r} ({phase}) reads {missing} but nothing before it writes "
                    f"{'it' if len(missing) == 1 else 'them'}; add a stage that writes "
                    f"{', '.join(repr(m) for m in missing)} earlier, or remove the read"
                )
            clash = sorted(set(stage.writes) & PROVIDED[phase])
            if clash:
                raise PipelineGraphError(f"stage {stage.name!r} writes {clash}, which the pipeline provides itself")
            available |= set(stage.writes)
        lacking = sorted(REQUIRED[phase] - available)
        if lacking:
            raise PipelineGraphError(f"no {phase} stage writes {lacking}; the chunk loop needs it")
        if phase == "init":
            init_values = available
