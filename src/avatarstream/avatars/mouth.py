"""Mouth shape from speech: openness from speech-band loudness, width from a coarse spectral cue.

Per video frame, over a 40 ms window centred on the frame: openness rises
with the level of the 150-4000 Hz band (quiet room tone, hum and breaths stay
under the threshold, so the mouth stays shut for them); width grows with the
share of high-frequency energy (/i/, /s/ spread the lips) and shrinks for dark
vowels (/u/, /o/ round them). Both are delayed by one frame and smoothed with
a fast attack / slower release, like real articulators.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

LAG_FRAMES = 1
LEVEL_FLOOR_DB = -35.0
LEVEL_RANGE_DB = 40.0


@dataclass(frozen=True)
class MouthTrack:
    """Per-frame openness 0..1 (the ground truth of lip sync) and width -1..1."""

    openness: np.ndarray
    width: np.ndarray

    def __len__(self) -> int:
        return len(self.openness)


def mouth_track(samples: np.ndarray, sample_rate: int, fps: int = 25) -> MouthTrack:
    """samples: mono float [S]; one value per video frame, round(S * fps / sample_rate) frames."""
    samples = np.asarray(samples, dtype=np.float64).reshape(-1)
    frames = round(len(samples) * fps / sample_rate)
    window = int(0.04 * sample_rate)
    hop = sample_rate / fps
    padded = np.pad(samples, (window, window))
    starts = (np.arange(frames) * hop + hop / 2 - window / 2 + window).astype(int)
    segments = padded[starts[:, None] + np.arange(window)[None]] * np.hanning(window)
    power = np.abs(np.fft.rfft(segments, axis=1)) ** 2
    freqs = np.fft.rfftfreq(window, 1 / sample_rate)
    band = power[:, (freqs >= 150) & (freqs <= 4000)].sum(1)
    high = power[:, (freqs >= 2000) & (freqs <= 6000)].sum(1)
    low = power[:, (freqs >= 150) & (freqs < 1000)].sum(1)
    level = 10 * np.log10(band / window + 1e-12)
    open_raw = np.clip((level - LEVEL_FLOOR_DB) / LEVEL_RANGE_DB, 0.0, 1.0)
    brightness = np.log10((high + 1e-9) / (low + 1e-9))
    width_raw = np.clip((brightness + 0.8) / 1.2, -1.0, 1.0) * (open_raw > 0)
    openness = _articulate(_delay(open_raw), attack=0.65, release=0.35)
    width = _articulate(_delay(width_raw), attack=0.4, release=0.4)
    return MouthTrack(openness=openness, width=width)


def _delay(x: np.ndarray) -> np.ndarray:
    return np.concatenate([np.full(LAG_FRAMES, x[0] if len(x) else 0.0), x])[: len(x)]


def _articulate(x: np.ndarray, attack: float, release: float) -> np.ndarray:
    """One-pole smoothing that moves faster towards larger values than back."""
    out = np.empty_like(x)
    state = 0.0
    for i, value in enumerate(x):
        state += (attack if value > state else release) * (value - state)
        out[i] = state
    return out
