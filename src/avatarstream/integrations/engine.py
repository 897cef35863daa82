"""What the voice-agent adapters need of an avatar, whichever process renders it: speech in, frames with their audio out.

An engine runs one live stream: ``push`` queues speech after what is queued, ``interrupt`` drops what is queued (speech
the model already took, at most one chunk, still plays), and ``frames`` yields every video frame with exactly the audio
that plays with it, idle frames with silence while nothing is queued, paced to the wall clock.
"""

from __future__ import annotations

from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

import numpy as np

from avatarstream.errors import InputError
from avatarstream.serve.audio_input import RATE, Resampler

#: The rate of the speech an engine takes and of the audio it returns (mono float32).
AUDIO_RATE = RATE


@dataclass(frozen=True)
class AvatarFrame:
    """One video frame and the audio that plays with it."""

    index: int  # in the stream's timeline
    image: np.ndarray  # uint8 [height, width, 3] RGB
    audio: np.ndarray  # float32 [samples] mono at AUDIO_RATE: 1/fps seconds
    speech: float  # share of the frame's audio that is queued speech (0: idle)


class AvatarEngine(Protocol):
    @property
    def fps(self) -> int:
        """Frames per second (a server's engine knows it once started)."""
        ...

    @property
    def frame_size(self) -> tuple[int, int]:
        """(width, height) of the frames (a server's engine knows it once started)."""
        ...

    async def start(self) -> None:
        """Open the stream (frames start at once, idle)."""
        ...

    async def push(self, samples: np.ndarray) -> None:
        """Queue speech (float32 mono at AUDIO_RATE); waits while the queue is full."""
        ...

    async def interrupt(self) -> int:
        """Drop the queued speech; returns the first frame that is idle again (those before it speak what the model already took)."""
        ...

    async def end(self) -> float:
        """Take no more speech: ``frames()`` ends once the queued speech is spoken (the last words are kept). Returns the
        estimated seconds until then; ``aclose`` afterwards."""
        ...

    def frames(self) -> AsyncIterator[AvatarFrame]:
        """Every frame from the start, until ``aclose`` (or, after ``end``, the last queued speech)."""
        ...

    async def aclose(self) -> None: ...


class SpeechIn:
    """Speech in any rate and channel count (the agent's TTS) -> float32 mono at AUDIO_RATE, continuous across pieces."""

    def __init__(self) -> None:
        self._format: tuple[int, int] | None = None
        self._resampler: Resampler | None = None

    def s16(self, data: bytes, rate: int, channels: int) -> np.ndarray:
        """Interleaved 16-bit little-endian PCM (what Pipecat and LiveKit frames hold)."""
        if not 8000 <= rate <= 192000 or channels not in (1, 2):
            raise InputError(f"speech must be 8000..192000 Hz with 1 or 2 channels, got {rate} Hz and {channels} channels")
        if len(data) % (2 * channels):
            raise InputError(f"16-bit PCM of {channels} channels comes in whole {2 * channels}-byte sample frames, got {len(data)} bytes")
        if self._format != (rate, channels):  # a new voice: a new resampler (the old one's tail is a few samples)
            self.close()
            self._format, self._resampler = (rate, channels), Resampler(rate, channels)
        assert self._resampler is not None
        samples = np.frombuffer(data, "<i2").reshape(-1, channels).T.astype(np.float32) / 32768.0
        return self._resampler.feed(samples)

    def close(self) -> None:
        if self._resampler is not None:
            self._resampler.close()
        self._resampler = self._format = None


def s16_bytes(samples: np.ndarray) -> bytes:
    """float32 in [-1, 1] -> 16-bit little-endian PCM (interleaved when ``samples`` is [n, channels])."""
    return (np.clip(samples, -1.0, 1.0) * 32767.0).astype("<i2").tobytes()


Mark = TypeVar("Mark")


class SpeechMarks(Generic[Mark]):
    """Says when the speech queued before a mark (the end of an utterance) has played in the frames handed out.

    Speech is counted in samples at AUDIO_RATE: queued (``pushed``) and played (each frame's share of speech). An
    interrupt drops what is queued, and the marks with it (the frameworks end an interrupted utterance themselves); the
    frames before the one it names still speak what the model had taken, which no later mark waits for.
    """

    def __init__(self, samples_per_frame: int) -> None:
        self._samples_per_frame = samples_per_frame
        self._pushed = 0
        self._played = 0.0
        self._old_until = 0  # frames before this one speak dropped utterances
        self._marks: deque[tuple[int, Mark]] = deque()

    def pushed(self, samples: int) -> None:
        self._pushed += samples

    def mark(self, mark: Mark) -> None:
        self._marks.append((self._pushed, mark))

    def dropped(self, idle_from_frame: int) -> None:
        self._played = self._pushed
        self._old_until = idle_from_frame
        self._marks.clear()

    def played(self, frame: int, speech: float) -> list[Mark]:
        """Frame ``frame`` went out with this share of speech; the marks its speech reached, oldest first."""
        if frame < self._old_until:
            return []
        self._played = min(self._played + speech * self._samples_per_frame, self._pushed)
        due = []
        while self._marks and self._marks[0][0] <= self._played + 1:  # a sample's leeway for the float sum
            due.append(self._marks.popleft()[1])
        return due

    def take_all(self) -> list[Mark]:
        """Every mark still waiting, oldest first (the stream ends)."""
        marks = [mark for _, mark in self._marks]
        self._marks.clear()
        return marks

    @property
    def queued_s(self) -> float:
        """Speech queued that has not played yet."""
        return max(self._pushed - self._played, 0.0) / AUDIO_RATE

    @property
    def waiting(self) -> bool:
        """Queued speech (or a mark) has not played yet."""
        return bool(self._marks) or self._pushed - self._played > 1
