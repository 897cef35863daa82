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

import functools
from collections.abc import AsyncGenerator, AsyncIterable, Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import torch

from avatarstream.errors import InputError, PipelineGraphError
from avatarstream.pipeline.aio import astream
from avatarstream.pipeline.chunks import FrameLayout
from avatarstream.pipeline.graph import independent_prefix, validate_graph
from avatarstream.pipeline.observer import RunObserver
from avatarstream.pipeline.plan import Plan
from avatarstream.pipeline.resume import Resumable
from avatarstream.pipeline.run import Run
from avatarstream.pipeline.spec import PipelineSpec
from avatarstream.pipeline.stage import PHASES, Phase, Stage
from avatarstream.publish.media import MediaChunk
from avatarstream.runtime.compiled import DEFAULT_BACKEND
from avatarstream.runtime.parallel.guard import LeadGate, follower_gate, stops_every_rank
from avatarstream.runtime.parallel.strategy import apply_declared
from avatarstream.runtime.residency import Runtime
from avatarstream.sources.pcm import PcmBlock


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
        frame_size: tuple[int, int] | None = None,
        reference_size: tuple[int, int] | None = None,
        settings: Mapping[str, object] | None = None,
        parallel: Mapping[str, Sequence[object]] | None = None,
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
        self.frame_size = frame_size  # (width, height) of the video, where the builder said (a family's spec does)
        self.reference_size = reference_size or frame_size  # (width, height) the reference is fitted to (smaller under an upscaler)
        self.settings = dict(settings or {})  # every generation setting the builder resolved, for reports
        self.parallel_parts = dict(parallel or {})  # what the builder declared each parallel strategy may split
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
        self.collective_finals = any(runtime.residency(m).sequential_only for s in self._by_phase["final"] for m in s.modules())
        # with overlap: read the next chunk's audio early and prepare it while this one generates.
        # Only for sources that never block (files): a live source would hold this chunk back.
        self.read_ahead = read_ahead
        self.independent = independent_prefix(self._by_phase["chunk"])  # chunk stages that can run a chunk ahead
        contexts = [s.audio_context_frames() for s in self.stages] or [(0, 0)]
        self.audio_frames_before = max(c[0] for c in contexts)
        self.audio_frames_after = max(c[1] for c in contexts)
        self.whole_audio = any(s.needs_whole_audio for s in self.stages)
        # the last final stage gives frames out later than it is given them (an upscaler): a run's state cannot be saved
        self.holds_frames = bool(self._by_phase["final"]) and self._by_phase["final"][-1].holds_frames

    @classmethod
    def from_spec(cls, spec: PipelineSpec, runtime: Runtime, *, overlap: bool = False, read_ahead: bool = False) -> Pipeline:
        """The pipeline a family's spec describes, on ``runtime`` (whose parallel groups the spec's layout check is held against)."""
        if spec.check_layout is not None:
            spec.check_layout(runtime.parallel.layout)
        apply_declared(runtime.parallel, spec.parallel)  # before the runtime places the weights: a sequence split hooks the network first
        return cls(
            spec.stages, spec.plan, runtime, fps=spec.fps, model_sample_rate=spec.model_sample_rate, overlap=overlap, read_ahead=read_ahead,
            frames=spec.frames, video_frames=spec.video_frames, frame_size=spec.frame_size,
            reference_size=spec.reference_size, settings=spec.settings, parallel=spec.parallel,
        )  # fmt: skip

    @property
    def chunk_seconds(self) -> float:
        """Seconds of video one chunk in the steady state (after the first) adds to the timeline."""
        first, end = self.frames.video_range(*self.plan.steady_frames())
        return (end - first) / self.fps

    @property
    def device(self) -> torch.device:
        return self.runtime.device

    def phase(self, phase: Phase) -> tuple[Stage, ...]:
        """The stages of ``phase``, in order."""
        return self._by_phase[phase]

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
            yield from Run(self, iter(audio), seed, observers).execute(reference_image, prompt, resume)
            return
        if resume is not None:
            raise InputError("a run split over several processes (--parallel) cannot be resumed from a saved state; run it on one")
        if groups.role != "lead":
            raise PipelineGraphError(f"rank {groups.rank} follows rank 0's runs: call follow(), not stream()")
        with stops_every_rank(groups):
            gate = LeadGate.announce(groups, np.asarray(reference_image), prompt, seed)
            run = Run(self, gate.relay(iter(audio)), seed, observers, gate)
            yield from run.execute(reference_image, prompt)

    def follow(self) -> None:
        """The other ranks' part of every run rank 0 streams, until rank 0 shuts the group down."""
        groups = self.runtime.parallel
        assert groups.control is not None and groups.role != "lead", "follow() is for the ranks after 0 of a parallel run"
        with stops_every_rank(groups):
            for command in groups.control.commands():
                gate = follower_gate(groups, command.run)
                if groups.role == "decode":
                    Run(self, iter(()), command.seed, (), gate).serve_finals(command.reference_image, command.prompt)
                else:
                    for _ in Run(self, groups.control.audio(command.run), command.seed, (), gate).execute(command.reference_image, command.prompt):
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
        return astream(functools.partial(self.stream, reference_image=reference_image, prompt=prompt, seed=seed, observers=observers, resume=resume), audio)
