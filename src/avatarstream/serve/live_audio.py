"""The live session's audio source: speech when some is queued, silence when not, paced to the wall clock.

The pipeline pulls audio as it needs it, so this source paces generation:
it never hands out audio more than ``lookahead_s`` ahead of the wall clock
(the pipeline waits instead), which bounds how late an interrupt takes effect
and how much finished video piles up. With nothing queued it hands out
silence, so the avatar keeps moving while nobody speaks. When the pipeline
asks for audio whose time has already passed, playback has stalled: that is
an underrun; it is counted and the clock is moved on, so idle time is never
generated as a backlog. ``end()`` lets the speech already queued play out and
then ends the stream (``close()`` ends it at once).
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from avatarstream.serve.audio_input import RATE
from avatarstream.sources.pcm import PcmBlock

MARKS = 512  # blocks remembered for speech_done_at: about 40 s at 25 fps, far more than a chunk and its look-ahead


class Segment(Protocol):
    def read(self, n: int) -> np.ndarray: ...

    @property
    def remaining_s(self) -> float: ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class Interruption:
    """What an interrupt did: the speech it dropped and the first frame that is idle again."""

    dropped_s: float
    idle_from_frame: int
    idle_in_s: float  # how far ahead of the wall clock that frame is (at most the look-ahead)


class LiveAudio:
    """Async iterable of PcmBlocks (mono, ``RATE``) for ``Pipeline.astream``."""

    def __init__(
        self,
        *,
        fps: int,
        lookahead_s: float,
        max_queued_s: float,
        block_frames: int = 2,
        underrun_tolerance_s: float = 0.1,
        on_underrun: Callable[[], None] = lambda: None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.fps = fps
        self.lookahead_s = lookahead_s
        self.max_queued_s = max_queued_s
        self._frame = RATE // fps
        self._block = block_frames * self._frame
        self._tolerance_s = underrun_tolerance_s
        self._on_underrun = on_underrun
        self._clock = clock
        self._queue: deque[Segment] = deque()
        self._speech: deque[list[int]] = deque()  # [start, end) sample spans of speech handed out
        self._t0: float | None = None  # wall time of media sample 0 (moved on at underruns)
        self._fed = 0  # samples handed to the pipeline
        self._closed = asyncio.Event()
        self._ending = False  # end(): no more speech is taken; the stream ends once the queue is spoken
        self._room = asyncio.Event()
        self._room.set()
        self.underruns = 0
        self.first_speech_at: float | None = None  # wall time the first speech was queued
        # where the speech stream stands, in samples of speech received: spoken or dropped (a resumed session starts further on)
        self._speech_done = 0
        self._done_at: deque[tuple[int, int]] = deque(maxlen=MARKS)  # (samples fed, speech done) after each block handed out

    def resume_at(self, fed: int, speech_done: int) -> None:
        """Carry on a saved session: the timeline already holds ``fed`` samples, and speech resumes after ``speech_done`` samples."""
        self._fed, self._speech_done = fed, speech_done
        self._done_at.append((fed, speech_done))

    @property
    def speech_done(self) -> int:
        """Speech samples spoken or dropped so far (counted from the start of the session, across resumes)."""
        return self._speech_done

    def speech_done_at(self, fed: int) -> int | None:
        """Speech samples spoken or dropped when the pipeline had taken ``fed`` samples (None: too long ago, or not yet)."""
        return next((done for at, done in reversed(self._done_at) if at == fed), None)

    # -- the client's side ----------------------------------------------------------------------

    def push(self, segment: Segment) -> None:
        """Queue speech after what is already queued (dropped once the stream is closed or ending)."""
        if self._closed.is_set() or self._ending:
            segment.close()
            return
        if self.first_speech_at is None:
            self.first_speech_at = self._clock()
        self._queue.append(segment)
        self._update_room()

    async def wait_for_room(self, seconds: float = 0.0) -> None:
        """Wait until ``seconds`` more fit under ``max_queued_s`` (backpressure for fast senders); a piece longer than the
        whole limit waits for an empty queue. Returns at once when the stream is closed."""
        while not (self._closed.is_set() or self._ending) and self.queued_s > 0 and self.queued_s + seconds > self.max_queued_s:
            self._room.clear()
            closed = asyncio.ensure_future(self._closed.wait())
            try:
                await asyncio.wait([closed, asyncio.ensure_future(self._room.wait())], return_when=asyncio.FIRST_COMPLETED)
            finally:
                closed.cancel()

    def interrupt(self) -> Interruption:
        """Drop every queued segment; what was already handed out (at most the look-ahead) still plays."""
        dropped = self._clear()
        now = self._media_now()
        fed_s = self._fed / RATE
        return Interruption(round(dropped, 3), math.ceil(fed_s * self.fps), round(max(fed_s - now, 0.0), 3))

    def end(self) -> float:
        """Take no more speech; the stream ends after the queued speech. Returns the media seconds still to hand out and
        play: the queue, and what was handed out ahead of the wall clock."""
        self._ending = True
        self._room.set()  # a sender waiting for room gets its answer now (it is refused)
        return self.queued_s + max(self._fed / RATE - self._media_now(), 0.0)

    @property
    def ending(self) -> bool:
        """``end()`` was called: pushes are refused by the session's routes, and the stream ends once the queue is spoken."""
        return self._ending

    def close(self) -> None:
        """End the stream: the pipeline's next pull ends it, and a waiting pull wakes at once."""
        self._closed.set()
        self._clear()

    @property
    def queued_s(self) -> float:
        return sum(s.remaining_s for s in self._queue)

    def speech_fraction(self, first_frame: int, end_frame: int) -> float:
        """Share of frames ``[first_frame, end_frame)`` that carry speech; call in timeline order."""
        lo, hi = first_frame * self._frame, end_frame * self._frame
        while self._speech and self._speech[0][1] <= lo:
            self._speech.popleft()
        covered = sum(max(0, min(hi, e) - max(lo, s)) for s, e in self._speech)
        return covered / max(hi - lo, 1)

    # -- the pipeline's side --------------------------------------------------------------------

    def __aiter__(self) -> LiveAudio:
        return self

    async def __anext__(self) -> PcmBlock:
        while not self._closed.is_set():
            if self._t0 is None:
                self._t0 = self._clock() - self._fed / RATE  # the clock starts with the first pull, after the init stages (or where a saved session was)
            now = self._media_now()
            fed_s = self._fed / RATE
            if now > fed_s:  # this audio should already be playing: the output stalls here
                if now - fed_s > self._tolerance_s:
                    self.underruns += 1
                    self._on_underrun()
                self._t0 += now - fed_s
                now = fed_s
            room = round((now + self.lookahead_s - fed_s) * RATE)
            if room < self._frame:  # a full look-ahead ahead of the wall clock: let the clock catch up
                await self._sleep((self._frame - room) / RATE)
                continue
            samples = self._take_speech(min(room, self._block))
            if samples.size:
                self._mark_speech(samples.size)
                self._speech_done += samples.size
            elif self._ending:  # the last queued speech has been handed out
                break
            else:
                samples = np.zeros(min(room, self._block), np.float32)
            self._fed += samples.size
            self._done_at.append((self._fed, self._speech_done))
            return PcmBlock(samples[None], RATE)
        raise StopAsyncIteration

    # -- inside -----------------------------------------------------------------------------------

    def _media_now(self) -> float:
        return 0.0 if self._t0 is None else self._clock() - self._t0

    def _take_speech(self, n: int) -> np.ndarray:
        while self._queue:
            samples = self._queue[0].read(n)
            if samples.size:
                self._update_room()
                return samples
            self._queue.popleft().close()
        self._update_room()
        return np.zeros(0, np.float32)

    def _mark_speech(self, n: int) -> None:
        if self._speech and self._speech[-1][1] == self._fed:
            self._speech[-1][1] += n
        else:
            self._speech.append([self._fed, self._fed + n])

    def _clear(self) -> float:
        dropped = 0.0
        while self._queue:
            segment = self._queue.popleft()
            dropped += segment.remaining_s
            self._speech_done += round(segment.remaining_s * RATE)
            segment.close()
        self._update_room()
        return dropped

    def _update_room(self) -> None:
        """Wake the senders waiting for room whenever the queue shrinks below the limit; each checks its own piece."""
        if self.queued_s < self.max_queued_s:
            self._room.set()

    async def _sleep(self, seconds: float) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._closed.wait(), seconds)
