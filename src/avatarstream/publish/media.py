"""The unit that flows from the pipeline to encoders and sinks."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class MediaChunk:
    """Consecutive final frames plus exactly the audio that plays with them.

    ``first_frame`` is the timeline index of ``frames[0]``; the audio covers
    frames ``[first_frame, first_frame + len(frames))`` on the output sample
    clock, so timestamps derive from indices and never drift.
    """

    first_frame: int
    frames: np.ndarray  # uint8 [T, H, W, 3] RGB
    audio: np.ndarray  # float32 [channels, samples] at the output sample rate

    @property
    def num_frames(self) -> int:
        return int(self.frames.shape[0])
