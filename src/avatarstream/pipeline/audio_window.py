"""What a chunk stage sees of the audio: the model's track, addressed by video frame."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from avatarstream.pipeline.chunks import FrameLayout
from avatarstream.sources.audio_timeline import SampleTrack


@dataclass(frozen=True)
class AudioWindow:
    """Read-only view of the model's audio track, addressed by video frame.

    ``frames`` maps the chunks' timeline frames to video frames; ``total_frames``
    is the audio's length in video frames once the stream has ended (None while
    it is live), for models that treat the end of the audio specially.
    """

    track: SampleTrack
    samples_per_frame: int
    frames: FrameLayout = FrameLayout()
    ended_at: Callable[[], int | None] = lambda: None

    @property
    def total_frames(self) -> int | None:
        return self.ended_at()

    def read(self, first_frame: int, end_frame: int) -> np.ndarray:
        """Mono samples of frames ``[first_frame, end_frame)``; silence outside the audio."""
        mono: np.ndarray = self.track.read(first_frame * self.samples_per_frame, end_frame * self.samples_per_frame)[0]
        return mono
