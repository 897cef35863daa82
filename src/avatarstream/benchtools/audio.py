"""Benchmark audio: the bundled speech at the model rate, looped to any length in constant memory."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from avatarstream.sources.audio_file import open_audio_file
from avatarstream.sources.audio_timeline import AudioTimeline
from avatarstream.sources.bundled import DEFAULT_SPEECH
from avatarstream.sources.pcm import PcmBlock

BLOCK_S = 0.2


def bundled_speech(rate: int) -> np.ndarray:
    """The bundled speech sample, mono float32 at ``rate`` (13 s: small enough to keep)."""
    timeline = AudioTimeline(rate, 48000, 2)
    with open_audio_file(DEFAULT_SPEECH) as source:
        for block in source:
            timeline.push(block)
    timeline.end()
    return timeline.model_track.read(0, round(timeline.duration_s * rate))[0]


def looped(samples: np.ndarray, rate: int, seconds: float) -> Iterator[PcmBlock]:
    """``seconds`` of ``samples`` repeated, as 0.2 s blocks; memory stays that of one sample."""
    total = round(seconds * rate)
    step = round(BLOCK_S * rate)
    for start in range(0, total, step):
        idx = np.arange(start, min(start + step, total)) % len(samples)
        yield PcmBlock(samples[idx][None], rate)


def looped_array(samples: np.ndarray, rate: int, seconds: float) -> np.ndarray:
    """The same audio as ``looped`` in one array (for the hand-written baseline)."""
    return samples[np.arange(round(seconds * rate)) % len(samples)]
