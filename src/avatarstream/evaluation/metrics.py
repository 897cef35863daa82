"""The three promises as numbers: lip sync, identity over time, seams between chunks.

All meters take frames as they stream out and keep one or two floats per
frame, so a 10-minute evaluation runs in constant memory like the pipeline.
"""

from __future__ import annotations

import numpy as np

from avatarstream.avatars.renderer import MOUTH_BOX
from avatarstream.evaluation.lipreader import mouth_openness
from avatarstream.pipeline.chunks import FrameLayout
from avatarstream.pipeline.plan import Plan, schedule

IDENTITY_POOL = 8
"""Identity is compared on 8x8-pixel averages: colours and layout of the face, not the exact pixels of a moving head."""


def correlation(a: np.ndarray, b: np.ndarray) -> float:
    """Pearson correlation; 0 when either series is constant (a frozen video has no sync at all)."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if len(a) != len(b) or len(a) < 2:
        raise ValueError(f"need two series of the same length >= 2, got {len(a)} and {len(b)}")
    a, b = a - a.mean(), b - b.mean()
    denominator = np.sqrt((a * a).sum() * (b * b).sum())
    return float((a * b).sum() / denominator) if denominator > 1e-9 else 0.0


def _pooled(frames: np.ndarray) -> np.ndarray:
    t, h, w, c = frames.shape
    k = IDENTITY_POOL
    return frames.reshape(t, h // k, k, w // k, k, c).astype(np.float32).mean(axis=(2, 4))


def _identity_mask(size: int) -> np.ndarray:
    """True outside the mouth box (the mouth is meant to move), at pooled resolution."""
    top, bottom, left, right = (v // IDENTITY_POOL for v in MOUTH_BOX)
    mask = np.ones((size // IDENTITY_POOL, size // IDENTITY_POOL), dtype=bool)
    mask[top : bottom + 1, left : right + 1] = False
    return mask


def identity_error(frames: np.ndarray, reference: np.ndarray) -> np.ndarray:
    """Mean absolute difference (0..255) of each frame from the reference, on pooled pixels outside the mouth."""
    mask = _identity_mask(reference.shape[0])
    diff = np.abs(_pooled(frames) - _pooled(reference[None]))
    return diff[:, mask].mean(axis=(1, 2))


def frame_changes(frames: np.ndarray, previous: np.ndarray | None) -> np.ndarray:
    """Mean absolute change of each frame from the one before (the first needs `previous`; without it: NaN)."""
    frames = frames.astype(np.int16)
    before = np.concatenate([previous[None].astype(np.int16), frames[:-1]]) if previous is not None else None
    if before is None:
        changes = np.abs(frames[1:] - frames[:-1]).mean(axis=(1, 2, 3))
        return np.concatenate([[np.nan], changes])
    return np.abs(frames - before).mean(axis=(1, 2, 3))


def seam_frames(plan: Plan, total_frames: int, layout: FrameLayout = FrameLayout()) -> np.ndarray:
    """Boolean [total_frames] video frames: True at frame f when f and f-1 were published from different chunks
    (``layout``: how the plan's timeline frames map to video frames)."""
    border = np.zeros(total_frames, dtype=bool)
    for chunk in schedule(plan, layout.timeline_frames(total_frames)):
        for piece in chunk.publishes:
            start = layout.video_start(piece.start)
            if 0 < start < total_frames:
                border[start] = True
    return border


def seam_ratio(changes: np.ndarray, border: np.ndarray) -> float:
    """Mean frame change across chunk borders / mean change within chunks (1 = seams are invisible)."""
    valid = ~np.isnan(changes)
    across, within = changes[valid & border], changes[valid & ~border]
    if len(across) == 0 or len(within) == 0 or within.mean() <= 0:
        return float("nan")
    return float(across.mean() / within.mean())


def per_minute(values: np.ndarray, fps: int) -> list[float]:
    """Means over whole minutes (a trailing partial minute counts if it is at least half a minute)."""
    size = 60 * fps
    out = [float(values[i : i + size].mean()) for i in range(0, len(values), size) if len(values[i : i + size]) >= size // 2]
    return out


class StreamMeter:
    """Per-frame measures of a streamed video: mouth openness, identity error, change from the previous frame."""

    def __init__(self, reference: np.ndarray) -> None:
        self.reference = reference
        self.openness: list[np.ndarray] = []
        self.identity: list[np.ndarray] = []
        self.changes: list[np.ndarray] = []
        self._last: np.ndarray | None = None

    def add(self, frames: np.ndarray) -> None:
        if len(frames) == 0:
            return
        self.openness.append(mouth_openness(frames))
        self.identity.append(identity_error(frames, self.reference))
        self.changes.append(frame_changes(frames, self._last))
        self._last = frames[-1].copy()

    def arrays(self) -> dict[str, np.ndarray]:
        return {name: np.concatenate(getattr(self, name)) for name in ("openness", "identity", "changes")}
