"""A bounded, sample-exact audio buffer for one session.

Audio arrives in pieces at any rate and channel count. It is resampled once
into two tracks: the model track (mono, the model's rate) that feeds the audio
encoder, and the output track (the encoder's rate and channels) that is muxed
with the frames. Both are addressed by absolute sample index from the start of
the session; samples before the start or after the end read as silence, so a
chunk near either edge needs no special case. Consumers discard what they no
longer need, so memory stays constant over any duration.
"""

from __future__ import annotations

from dataclasses import dataclass

import av
import numpy as np

from avatarstream.errors import InputError
from avatarstream.sources.pcm import PcmBlock


class SampleTrack:
    """Samples ``[first, end)`` of one resampled track, in a growable-but-trimmed array."""

    def __init__(self, rate: int, channels: int) -> None:
        self.rate = rate
        self.channels = channels
        self.first = 0
        self._data = np.zeros((channels, 0), dtype=np.float32)

    @property
    def end(self) -> int:
        return self.first + self._data.shape[1]

    @property
    def buffered(self) -> int:
        return int(self._data.shape[1])

    @property
    def nbytes(self) -> int:
        """What the held samples weigh (and a snapshot of them)."""
        return int(self._data.nbytes)

    def append(self, samples: np.ndarray) -> None:
        if samples.shape[1]:
            self._data = np.concatenate([self._data, samples.astype(np.float32, copy=False)], axis=1)

    def read(self, start: int, stop: int) -> np.ndarray:
        """Samples ``[start, stop)``; silence outside what was received."""
        if max(start, 0) < min(stop, self.first):
            raise ValueError(f"samples before {self.first} were already discarded (asked for {start})")
        out = np.zeros((self.channels, max(stop - start, 0)), dtype=np.float32)
        lo, hi = max(start, self.first), min(stop, self.end)
        if hi > lo:
            out[:, lo - start : hi - start] = self._data[:, lo - self.first : hi - self.first]
        return out

    def replace(self, first: int, samples: np.ndarray, end: int) -> None:
        """Hold ``samples`` from ``first`` on, cut or padded with silence to end at ``end``."""
        self.first = first
        self._data = np.zeros((self.channels, end - first), np.float32)
        keep = min(samples.shape[1], end - first)
        self._data[:, :keep] = samples[:, :keep]

    def discard_before(self, sample: int) -> None:
        drop = min(max(sample - self.first, 0), self._data.shape[1])
        if drop:
            self._data = self._data[:, drop:].copy()
            self.first += drop


@dataclass(frozen=True)
class TimelineState:
    """What a timeline still holds (samples from ``*_first`` on) and how much input it took: enough to carry a session on elsewhere."""

    model_first: int
    model: np.ndarray
    output_first: int
    output: np.ndarray
    input_samples: int
    input_rate: int | None

    @property
    def nbytes(self) -> int:
        return int(self.model.nbytes + self.output.nbytes)


class _Resampled:
    """One av.AudioResampler feeding one SampleTrack."""

    def __init__(self, rate: int, channels: int) -> None:
        layout = "mono" if channels == 1 else "stereo"
        self.track = SampleTrack(rate, channels)
        self._resampler = av.AudioResampler(format="fltp", layout=layout, rate=rate)

    def push(self, frame: av.AudioFrame | None) -> None:
        for out in self._resampler.resample(frame):
            self.track.append(out.to_ndarray())


class AudioTimeline:
    """The session's audio: push blocks as they arrive, read windows by sample index."""

    def __init__(self, model_rate: int, output_rate: int, output_channels: int) -> None:
        if output_channels not in (1, 2):
            raise ValueError(f"output audio must be mono or stereo, got {output_channels} channels")
        self.model = _Resampled(model_rate, 1)
        self.output = _Resampled(output_rate, output_channels)
        self.ended = False
        self._input_rate: int | None = None
        self._input_samples = 0

    @property
    def model_track(self) -> SampleTrack:
        return self.model.track

    @property
    def output_track(self) -> SampleTrack:
        return self.output.track

    def push(self, block: PcmBlock) -> None:
        if self.ended:
            raise ValueError("audio pushed after the end of the stream")
        samples = np.ascontiguousarray(block.samples, dtype=np.float32)
        if samples.ndim != 2 or samples.shape[0] not in (1, 2) or block.sample_rate <= 0:
            raise InputError(
                f"audio blocks must be float32 [channels, samples] with 1 or 2 channels and a positive rate, "
                f"got shape {tuple(samples.shape)} at {block.sample_rate} Hz"
            )
        if self._input_rate is None:
            self._input_rate = block.sample_rate
        elif block.sample_rate != self._input_rate:
            raise InputError(f"audio sample rate changed mid-stream ({self._input_rate} -> {block.sample_rate} Hz); keep one rate per session")
        if samples.shape[1] == 0:
            return
        if not np.isfinite(samples).all():  # NaN reaches the AAC encoder and fails the render with a codec error
            raise InputError(f"audio block at {self.duration_s:.2f} s holds NaN or infinite samples; send finite samples in [-1, 1]")
        self._input_samples += samples.shape[1]
        frame = av.AudioFrame.from_ndarray(samples, format="fltp", layout="mono" if samples.shape[0] == 1 else "stereo")
        frame.sample_rate = block.sample_rate
        self.model.push(frame)
        self.output.push(frame)

    def end(self) -> None:
        """Mark the end of the stream and flush the resamplers' tails."""
        if not self.ended:
            self.model.push(None)
            self.output.push(None)
            self.ended = True

    @property
    def duration_s(self) -> float:
        """Exact duration of what was received, from the input sample clock."""
        return self._input_samples / self._input_rate if self._input_rate else 0.0

    def available_s(self) -> float:
        """Seconds readable on both tracks (resamplers lag by a few samples)."""
        if self.ended:
            return float("inf")
        return min(self.model_track.end / self.model_track.rate, self.output_track.end / self.output_track.rate)

    @property
    def nbytes(self) -> int:
        """What ``snapshot`` would copy, weighed without copying."""
        return self.model_track.nbytes + self.output_track.nbytes

    def snapshot(self) -> TimelineState:
        """A copy of what is held, for a resumable state (a live stream's: one that has not ended)."""
        model, output = self.model_track, self.output_track
        return TimelineState(
            model.first, model.read(model.first, model.end), output.first, output.read(output.first, output.end), self._input_samples, self._input_rate
        )

    def restore(self, state: TimelineState) -> None:
        """Continue from ``state``: its samples at their absolute positions, the next input after its last.

        Fresh resamplers start without the old ones' filter tail, so each track is cut or padded with silence to exactly where
        the input has reached; the seam loses at most the resampler's delay (about a millisecond), and the timeline stays exact."""
        self._input_samples, self._input_rate = state.input_samples, state.input_rate
        for track, first, samples in ((self.model_track, state.model_first, state.model), (self.output_track, state.output_first, state.output)):
            end = state.input_samples * track.rate // state.input_rate if state.input_rate else first + samples.shape[1]
            track.replace(min(first, end), samples, end)
