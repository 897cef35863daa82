"""Is a reference image one of ours? The bundled weights only animate procedural avatars.

Procedural frames are flat colour fields with smooth gradients and thin
anti-aliased edges; photographs have texture and sensor noise almost
everywhere. The share of pixels whose local detail (difference from the mean
of their 3x3 neighbourhood) is below a couple of grey levels separates the two.
"""

from __future__ import annotations

import numpy as np

FLAT_LEVEL = 2.0
"""Local detail (grey levels) under which a pixel counts as flat."""
MIN_FLAT_SHARE = 0.8
"""Procedural avatars are > 90 % flat; photos rarely reach 60 %."""


def flat_share(image: np.ndarray) -> float:
    grey = np.asarray(image, dtype=np.float32)[..., :3] @ np.array([0.299, 0.587, 0.114], dtype=np.float32)
    padded = np.pad(grey, 1, mode="edge")
    h, w = grey.shape
    neighbourhood = sum(padded[dy : dy + h, dx : dx + w] for dy in range(3) for dx in range(3)) / 9.0
    return float((np.abs(grey - neighbourhood) < FLAT_LEVEL).mean())


def looks_procedural(image: np.ndarray) -> bool:
    """True for a procedural avatar frame (uint8 [H, W, 3]); False for photographs and other textured images."""
    return flat_share(image) >= MIN_FLAT_SHARE
