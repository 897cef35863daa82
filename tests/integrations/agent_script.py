"""What the voice-agent tests say and what they check: utterances of a tone, and a viewer's timing of them.

The avatar is the colourbars test family (tests/plugins/colourbars): its bars grow in contrast with the loudness of
each frame's audio, so the tone shows as a flash in the frames that play it. A viewer times both on one clock after
WebRTC's jitter buffers (``webrtc_watch.Viewer``); these helpers read what it saw.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from webrtc_watch import LOUD, Timeline

FLASH = 65.0  # contrast (RGB std) of colourbars frames that play the tone (80 and more); idle ones measure about 45
COLOURBARS_FPS = 25
COLOURBARS_SIZE = (64, 48)
COLOURBARS_CHUNK_S = 12 / COLOURBARS_FPS  # its block of frames


def tone(seconds: float, rate: int, channels: int = 1) -> bytes:
    """A 440 Hz tone at half scale as interleaved s16 PCM, as a TTS hands out speech."""
    t = np.arange(round(seconds * rate)) / rate
    mono = 0.5 * np.sin(2 * math.pi * 440 * t)
    return (np.repeat(mono[:, None], channels, axis=1) * 32767).astype("<i2").tobytes()


def pieces(data: bytes, rate: int, channels: int, piece_s: float = 0.02) -> list[bytes]:
    step = round(piece_s * rate) * 2 * channels
    return [data[i : i + step] for i in range(0, len(data), step)]


def loud(value: float) -> bool:
    return value > LOUD


def flashes(value: float) -> bool:
    return value > FLASH


@dataclass(frozen=True)
class Heard:
    """One utterance as the viewer got it."""

    heard: float  # the first loud audio
    last_heard: float  # the last loud audio
    seen: float | None = None  # the first flashing frame (for a model that flashes: colourbars)

    @property
    def offset_s(self) -> float:
        """Sound after picture (positive: the sound is late)."""
        assert self.seen is not None, "this model shows no flash"
        return self.heard - self.seen


def heard(video: Timeline, audio: Timeline, after: float, before: float = math.inf, *, flash: bool = True) -> Heard:
    """The utterance that starts after ``after`` (and ends before ``before``); with ``flash``, the flash that shows it."""
    start = audio.first(loud, after)
    assert start is not None and start < before, f"no tone heard after {after:.2f}"
    ends = [t for t, value in audio.points if start <= t < before and loud(value)]
    if not flash:
        return Heard(start, ends[-1])
    seen = video.first(flashes, after)
    assert seen is not None, f"no flash seen after {after:.2f}"
    return Heard(start, ends[-1], seen)


def rate(timeline: Timeline, start: float, end: float) -> float:
    """Frames per second that arrived in [start, end)."""
    return timeline.count(start, end) / (end - start)
