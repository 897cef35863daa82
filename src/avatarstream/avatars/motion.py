"""Slow natural head motion and blinks, drawn from a motion seed.

Motion is a sum of a few slow sinusoids (0.05-0.4 Hz) that starts from the
neutral pose (a one-second ease-in), so the reference image, which is the
neutral pose, is also what a clip looks like at its first frame.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

BLINK_FRAMES = 5
"""A blink closes and reopens the eyes over this many frames (200 ms at 25 fps)."""


@dataclass(frozen=True)
class Motion:
    """Per-frame head offset in pixels (dx, dy), roll in radians and eyelid closure 0..1."""

    dx: np.ndarray
    dy: np.ndarray
    angle: np.ndarray
    blink: np.ndarray

    def __len__(self) -> int:
        return len(self.dx)


def motion_track(frames: int, seed: int, fps: int = 25) -> Motion:
    rng = np.random.default_rng([seed, 0x30])
    t = np.arange(frames) / fps
    ease = np.clip(t, 0.0, 1.0) ** 2 * (3 - 2 * np.clip(t, 0.0, 1.0))

    def wander(scale: float) -> np.ndarray:
        freqs = rng.uniform(0.05, 0.4, size=3)
        phases = rng.uniform(0, 2 * np.pi, size=3)
        weights = rng.uniform(0.3, 1.0, size=3)
        wave = sum(w * (np.sin(2 * np.pi * f * t + p) - np.sin(p)) for f, p, w in zip(freqs, phases, weights))
        return scale * ease * wave / weights.sum()

    blink = np.zeros(frames)
    shape = np.sin(np.linspace(0, np.pi, BLINK_FRAMES + 2)[1:-1])
    frame = int(rng.uniform(1.0, 4.0) * fps)
    while frame + BLINK_FRAMES <= frames:
        blink[frame : frame + BLINK_FRAMES] = shape
        frame += int(rng.uniform(2.0, 6.0) * fps)
    return Motion(dx=wander(5.0), dy=wander(3.5), angle=wander(0.06), blink=blink)
