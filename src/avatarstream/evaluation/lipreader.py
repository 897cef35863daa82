"""A fixed "lip reader": how open the mouth is in a frame, from pixels alone.

The procedural mouth interior is near-black for every identity while skin,
lips, nose and background never are, so within a box that holds the mouth in
every pose, the dark coverage of each pixel column is the mouth's vertical
opening there. The mean of the three tallest columns is the openness in
pixels: it ignores the slow head motion (the box is larger than the motion)
and degrades gracefully on blurry generated frames.
"""

from __future__ import annotations

import numpy as np

from avatarstream.avatars.renderer import MOUTH_BOX

DARK_FULL = 20.0
DARK_NONE = 45.0
"""Luminance at or below DARK_FULL counts fully as mouth interior, at or above DARK_NONE not at all."""


def mouth_openness(frames: np.ndarray) -> np.ndarray:
    """uint8 frames [T, 256, 256, 3] (or one [256, 256, 3]) -> opening in pixels [T]."""
    frames = np.asarray(frames)
    if frames.ndim == 3:
        frames = frames[None]
    top, bottom, left, right = MOUTH_BOX
    box = frames[:, top:bottom, left:right].astype(np.float32)
    luminance = box @ np.array([0.299, 0.587, 0.114], dtype=np.float32)
    dark = np.clip((DARK_NONE - luminance) / (DARK_NONE - DARK_FULL), 0.0, 1.0)
    columns = np.sort(dark.sum(axis=1), axis=1)
    return columns[:, -3:].mean(axis=1)
