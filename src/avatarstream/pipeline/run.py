"""One request through the pipeline: its session state, audio timeline, and the chunk loop (DESIGN.md §4).

The loop is an engine step: the ``Scheduler`` says which chunk runs next (audio
readiness, the end of the plan, the rank gate), the ``ChunkExecutor`` runs it
and hands its final stretches to the run's ``Finals`` (inline, a worker, or a
parallel role), and the ``Emitter`` yields what is finished and reports the
chunk boundary. The host's upkeep between chunks (memory back to the system,
the CPU thread count) is the runtime's hook.
"""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from avatarstream.errors import InputError
from avatarstream.pipeline.audio_window import AudioWindow
from avatarstream.pipeline.emitter import Emitter
from avatarstream.pipeline.executor import ChunkExecutor
from avatarstream.pipeline.finals import Finals, FinalStages, InlineFinals, NoFinals, QueuedFinals
from avatarstream.pipeline.frame_ledger import FrameLedger
from avatarstream.pipeline.graph import with_next
from avatarstream.pipeline.loop_view import PipelineView
from avatarstream.pipeline.observer import RunObserver
from avatarstream.pipeline.resume import Resumable, to_device
from avatarstream.pipeline.scheduler import ChunkGate, Scheduler
from avatarstream.pipeline.stage import Stage
from avatarstream.pipeline.stage_runner import StageRunner
from avatarstream.pipeline.state import HeldLatents, SessionState
from avatarstream.publish.media import MediaChunk
from avatarstream.runtime.overlap import FinalizeWorker
from avatarstream.runtime.parallel.roles import finals_worker, runs_finals
from avatarstream.runtime.parallel.stage_pipe import receive_stretches, send_decoded
from avatarstream.sources.audio_timeline import AudioTimeline
from avatarstream.sources.pcm import PcmBlock


def _total_video_of(run: weakref.ref[Run]) -> Callable[[], int | None]:
    """The run's video length once its audio has ended, read without a reference cycle: an ended run (its latents, caches and
    resamplers) is freed at once, not when the cyclic garbage collector next runs, which on a busy server can be many sessions later."""
    return lambda: getattr(getattr(run(), "scheduler", None), "total_video", None)


class Run:
    """One request through the pipeline: owns the session state and the audio timeline."""

    def __init__(self, pipeline: PipelineView, audio: Iterator[PcmBlock], seed: int, observers: Sequence[RunObserver], gate: ChunkGate | None = None) -> None:
        self.p = pipeline
        pipeline.runtime.ops.fit_threads()  # CPU: every core on a quiet machine, one beside another busy program
        self.gate = gate  # opens each chunk for the others (rank 0) or waits for it (followers)
        self.session = SessionState(seed=seed, held=HeldLatents(pipeline.plan.max_held))
        self.timeline = AudioTimeline(pipeline.model_sample_rate, pipeline.output_sample_rate, pipeline.output_channels)
        self.window = AudioWindow(self.timeline.model_track, pipeline.model_sample_rate // pipeline.fps, pipeline.frames, _total_video_of(weakref.ref(self)))
        self.runner = StageRunner(pipeline.runtime, self.session, observers)
        self.scheduler = Scheduler(
            pipeline.plan, pipeline.frames, pipeline.fps, self.timeline, audio, video_frames=pipeline.video_frames,
            frames_after=pipeline.audio_frames_after, whole_audio=pipeline.whole_audio, gate=gate,
        )  # fmt: skip
        takes_states = any(obs.wants_resumable for obs in observers)
        finals = pipeline.phase("final")
        if takes_states and finals and finals[-1].holds_frames:
            raise InputError(
                f"this pipeline's stage {finals[-1].name!r} holds frames back (an upscaler), and a saved state cannot carry them: "
                "run it without saving or resuming sessions"
            )
        ledger = FrameLedger(pipeline.output_sample_rate, pipeline.fps)
        self.final = FinalStages(self.runner, finals, pipeline.runtime.ops, ledger, take_parts=takes_states)
        self.emitter = Emitter(pipeline, self.runner, self.timeline, self.scheduler, self.final)

    def execute(self, reference_image: Any, prompt: str, resume: Resumable | None = None) -> Iterator[MediaChunk]:
        """The run: init (or a saved state), then schedule → execute → emit until the audio or the run ends."""
        self.emitter.start()
        if resume is None:
            self._run_init(reference_image, prompt, self.p.phase("chunk")[0])
        else:
            self._restore(resume)
        executor = ChunkExecutor(self.p, self.runner, self.scheduler, self.timeline, self.window, self._finals(), self.final)
        first = self.p.plan.first() if resume is None else self.p.plan.chunk(resume.next_chunk)
        executor.next_publish = 0 if resume is None else resume.next_publish
        self.emitter.open_handover()
        try:
            for chunk in self.scheduler.chunks(first):
                start_s = self.runner.now()
                yield from self.emitter.publish(executor.execute(chunk))
                end_s, upcoming = self.runner.now(), self.p.plan.next_after(chunk)
                executor.release_audio(upcoming)
                self.emitter.chunk_done(chunk, upcoming, (start_s, end_s), executor.next_publish, executor.submitted)
                self.p.runtime.ops.between_chunks()
            yield from self.emitter.publish(executor.drain())
            if self.gate is not None:
                self.gate.end()  # a follower reads rank 0's stop for the chunk after the last
        finally:
            executor.close()
            self.p.runtime.ops.restore_threads()
            if self.gate is not None and self.p.runtime.parallel.role == "lead":
                with contextlib.suppress(Exception):  # failing: the store may be gone, and the failure is what matters
                    self.gate.end()
        self.emitter.end()

    def serve_finals(self, reference_image: Any, prompt: str) -> None:
        """The decode rank's run: the init stages (final stages read their values), then every stretch rank 0 sends."""
        groups = self.p.runtime.parallel
        assert groups.control is not None and groups.to_decoder is not None and groups.from_decoder is not None, "a decode rank has its groups"
        assert self.gate is not None, "the decode rank's run has its gate"
        stages = self.p.phase("final")
        self._run_init(reference_image, prompt, stages[0])
        source = groups.layout.last_step_rank  # whoever holds the final latents: rank 0, or the last step's under steps=N
        for stretch in receive_stretches(groups.control, self.gate.run, groups.to_decoder, self.p.device, source):
            if isinstance(stretch, str):  # the run ended, and the last final stage holds frames
                send_decoded(self.final.flush(), groups.from_decoder, self.p.device)
                continue
            step: dict[str, Any] = {"latents": stretch.latents, "frames_range": stretch.frames_range}
            send_decoded(self.final.run(step, stages[0], None, stretch.frames_range), groups.from_decoder, self.p.device)

    def _finals(self) -> Finals:
        """Where this run's final stages run: a parallel role's worker, nowhere (a follower), a local worker, or inline."""
        groups, ops = self.p.runtime.parallel, self.p.runtime.ops
        remote = finals_worker(groups, self.gate.run if self.gate is not None else 0, ops)
        if remote is not None:
            return QueuedFinals(remote)
        if not runs_finals(groups, collective_finals=self.p.collective_finals):
            return NoFinals()
        return QueuedFinals(FinalizeWorker(ops)) if self.p.overlap and groups.role == "lead" else InlineFinals()

    def _run_init(self, reference_image: Any, prompt: str, after: Stage) -> None:
        self.session.values.update(reference_image=reference_image, prompt=prompt)
        for stage, upcoming in with_next(self.p.phase("init"), after):
            self.runner.run(stage, self.session.values, upcoming)

    def _restore(self, state: Resumable) -> None:
        """Put a saved run's values, latents, stage caches and audio in place of the init stages' work."""
        device, stages = self.p.device, {stage.name: stage for stage in self.p.stages}
        unknown = sorted(set(state.caches) - set(stages))
        if unknown:
            raise InputError(
                f"the saved state holds the caches of stages {unknown}, which this pipeline does not have: resume it with the pipeline that saved it"
            )
        self.session.seed, self.session.values = state.seed, to_device(state.values, device)
        for name, part in state.caches.items():
            cache = stages[name].restore_cache(to_device(part, device))
            if cache is not None:
                self.session.caches[name] = cache
        for key, latents in state.held.items():  # oldest first, as they were held
            self.session.held.put(self.p.plan.chunk(key), latents.to(device))
        self.timeline.restore(state.audio)
        self.emitter.host_values = state.values
