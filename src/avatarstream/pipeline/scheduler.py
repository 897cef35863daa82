"""Schedule: which chunk runs next, and when (the first of the loop's three parts: schedule, execute, emit).

A chunk runs once the audio its window (and the stages' look-ahead) reads is
there, unless the plan is past the end of the audio or rank 0 stopped the run.
The scheduler pulls the audio source only as far as the next chunk needs: a
live source makes it wait, a file never does. It owns the audio's end: once
the source is done it knows the run's length in timeline and video frames.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from typing import Protocol

from avatarstream.errors import InputError
from avatarstream.pipeline.chunks import Chunk, FrameLayout
from avatarstream.pipeline.plan import Plan
from avatarstream.sources.audio_timeline import AudioTimeline
from avatarstream.sources.pcm import PcmBlock


class ChunkGate(Protocol):
    """Keeps the ranks of a run split over processes at the same chunk (``runtime.parallel.guard``)."""

    run: int  # the run's number among the group's runs (its keys in the host-side store)

    def chunk_starts(self) -> bool:
        """True when the next chunk runs on every rank; False once rank 0 stopped the run."""
        ...

    def end(self) -> None:
        """This rank's run is over: the others end at the same chunk."""
        ...


class Scheduler:
    """The plan's chunks in order, each once its audio is readable, until the end of the audio or of the run."""

    def __init__(
        self,
        plan: Plan,
        frames: FrameLayout,
        fps: int,
        timeline: AudioTimeline,
        audio: Iterator[PcmBlock],
        *,
        video_frames: Callable[[float], int],
        frames_after: int,
        whole_audio: bool,
        gate: ChunkGate | None,
    ) -> None:
        self.plan, self.frames, self.fps = plan, frames, fps
        self.timeline, self.audio = timeline, audio
        self.video_frames = video_frames
        self.frames_after = frames_after  # audio the stages read past a chunk's window, in video frames
        self.whole_audio = whole_audio  # a stage reads the whole audio before the first chunk
        self.gate = gate
        self.total_frames: int | None = None  # timeline frames, once the audio has ended
        self.total_video: int | None = None  # video frames: round(duration x fps)

    def chunks(self, first: Chunk) -> Iterator[Chunk]:
        """From ``first`` on, every chunk to run; the run ends where this ends."""
        chunk = first
        while self.ready(chunk) and (self.gate is None or self.gate.chunk_starts()):
            yield chunk
            chunk = self.plan.next_after(chunk)

    def ready(self, chunk: Chunk) -> bool:
        """Wait until ``chunk``'s audio is readable; False when the plan is past the end of the audio there."""
        self._wait_for_audio(chunk)
        return self.total_frames is None or not self.plan.is_past_end(chunk, self.total_frames)

    def _wait_for_audio(self, chunk: Chunk) -> None:
        """Pull audio until the chunk's window (plus look-ahead) is readable or the stream ends."""
        need_s = math.inf if self.whole_audio else (self.frames.video_start(chunk.window_end) + self.frames_after) / self.fps
        while not self.timeline.ended and self.timeline.available_s() < need_s:
            block = next(self.audio, None)
            if block is None:
                self.timeline.end()
            else:
                self.timeline.push(block)
        if self.timeline.ended and self.total_frames is None:
            self.total_video = self.video_frames(self.timeline.duration_s)
            self.total_frames = self.frames.timeline_frames(self.total_video)
            if self.total_video == 0:
                raise InputError(
                    f"the audio is too short to make a single frame ({self.timeline.duration_s * 1000:.1f} ms); "
                    f"give at least {1000 / self.fps / 2:.0f} ms of audio"
                )
