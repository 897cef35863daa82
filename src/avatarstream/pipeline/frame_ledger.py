"""Pairs the frames final stages give out with the timeline positions and audio of the stretches they were given.

Most final stages turn a stretch's latents into exactly its frames. A stage
that needs frames ahead (a streaming super-resolution model: 8 frames out per
8 in, but only once 25 are in) gives out fewer and the rest later, so the
frames that come out of a stretch's final stages are the oldest frames not yet
out, whichever stretch they were given with. The ledger holds, per stretch
still owed frames, where it starts, how many of its frames are published (a
run's last stretch is trimmed) and its audio, and cuts each batch of frames
that comes out into one ``MediaChunk`` with exactly the audio that plays with
it. It holds at most the stretches a holding stage is behind: bounded, as the
stage's own buffer is.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np

from avatarstream.errors import PipelineGraphError
from avatarstream.publish.media import MediaChunk


@dataclass
class _Owed:
    first: int  # timeline index of the stretch's first frame
    count: int  # frames the final stages were given
    keep: int  # of which the first ``keep`` are published (a run's last stretch is trimmed)
    audio: np.ndarray  # the audio of the kept frames, [channels, samples]
    out: int = 0  # frames of it already out


class FrameLedger:
    """The stretches given to the final stages whose frames are not all out yet, oldest first."""

    def __init__(self, sample_rate: int, fps: int) -> None:
        self.sample_rate, self.fps = sample_rate, fps
        self._owed: deque[_Owed] = deque()

    def given(self, first: int, count: int, keep: int, audio: np.ndarray) -> None:
        """A stretch of ``count`` frames starting at timeline frame ``first`` went into the final stages."""
        self._owed.append(_Owed(first, count, keep, audio))

    @property
    def frames_owed(self) -> int:
        return sum(owed.count - owed.out for owed in self._owed)

    def take(self, frames: np.ndarray) -> MediaChunk | None:
        """The oldest owed frames, which ``frames`` are, with their audio; None when no frame of them is published."""
        if frames.shape[0] > self.frames_owed:
            raise PipelineGraphError(f"final stages gave out {frames.shape[0]} frames, but only {self.frames_owed} went in")
        kept: list[np.ndarray] = []
        audio: list[np.ndarray] = []
        first: int | None = None
        used = 0
        while used < frames.shape[0]:
            owed = self._owed[0]
            n = min(owed.count - owed.out, frames.shape[0] - used)
            published = max(0, min(owed.out + n, owed.keep) - owed.out)  # frames past ``keep`` are dropped
            if published:
                start = owed.first + owed.out
                first = start if first is None else first
                kept.append(frames[used : used + published])
                audio.append(owed.audio[:, self._sample(start) - self._sample(owed.first) : self._sample(start + published) - self._sample(owed.first)])
            owed.out += n
            used += n
            if owed.out == owed.count:
                self._owed.popleft()
        if first is None:
            return None
        return MediaChunk(first, np.concatenate(kept) if len(kept) > 1 else kept[0], np.concatenate(audio, axis=1) if len(audio) > 1 else audio[0])

    def _sample(self, frame: int) -> int:
        """Where frame ``frame`` starts on the output sample clock (as the loop cuts each stretch's audio)."""
        return frame * self.sample_rate // self.fps
