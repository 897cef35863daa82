"""Decode an audio file piece by piece into PcmBlocks.

The file is decoded as it is read, one codec frame at a time, so memory stays
constant whether the file lasts ten seconds or ten hours. Opening decodes the
first frame, so an unusable file is reported before any work starts. Files with
more than two channels are downmixed to mono (the models hear one voice); a
sample rate outside ``MIN_RATE..MAX_RATE`` (a damaged header: 1 Hz would turn
half a second of samples into hours of audio) and NaN or infinite samples are
refused.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator

import av
import numpy as np

from avatarstream.errors import InputError
from avatarstream.lifecycle import ClosesOnExit
from avatarstream.sources.pcm import PcmBlock
from avatarstream.sources.riff import oversized_chunk

_FORMATS_HINT = "use a WAV, MP3, FLAC or OGG file"
MIN_RATE, MAX_RATE = 4000, 384000


def open_audio_file(path: str | os.PathLike[str]) -> AudioFileSource:
    """Open and validate an audio file; raises InputError when it cannot be used."""
    return AudioFileSource(path)


class AudioFileSource(ClosesOnExit):
    """One pass over an audio file as float32 [channels, n] PcmBlocks in [-1, 1].

    ``duration_s`` is the length the file header claims (None if it says
    nothing): good for a progress bar, never used for timing, which comes from
    the decoded samples.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = os.fspath(path)
        self._decoded_s = 0.0  # seconds decoded so far, to say where a file is damaged
        if not os.path.exists(self.path):
            raise InputError(f"audio file not found: {self.path}")
        problem = oversized_chunk(self.path) if os.path.isfile(self.path) else None
        if problem is not None:
            raise self._unreadable(f"{problem} (a damaged header)")
        try:
            self._container = av.open(self.path, metadata_errors="replace")  # a tag that is not UTF-8 does not make audio unplayable
        except (OSError, av.error.FFmpegError) as err:
            raise self._unreadable(getattr(err, "strerror", None) or str(err)) from err
        try:
            if not self._container.streams.audio:
                raise InputError(f"audio file {self.path} has no audio stream; {_FORMATS_HINT}")
            stream = self._container.streams.audio[0]
            if stream.codec_context is None:  # a WAV's format tag (or a sample width) no decoder takes
                raise self._unreadable("FFmpeg has no decoder for its audio codec")
            rate = stream.codec_context.sample_rate
            if not MIN_RATE <= rate <= MAX_RATE:
                raise InputError(
                    f"audio {self.path} says its sample rate is {rate} Hz; use {MIN_RATE}..{MAX_RATE} Hz (a damaged header? re-export the file, e.g. at 48 kHz)"
                )
            self.duration_s = _header_duration(self._container, stream)
            self._frames = self._container.decode(stream)
            first = self._next_block(unreadable=self._unreadable)
            if first is None:
                raise InputError(f"audio {self.path} has zero length")
        except BaseException:
            self._container.close()
            raise
        self.sample_rate = first.sample_rate
        self.channels = first.samples.shape[0]
        self._first: PcmBlock | None = first
        self._started = False

    def __iter__(self) -> Iterator[PcmBlock]:
        """Yield blocks in file order; the file is closed when the last one is read."""
        if self._started:
            raise RuntimeError(f"{self.path} was already read; open it again to read it twice")
        self._started = True
        return self._blocks()

    def close(self) -> None:
        """Release the file; safe to call more than once."""
        self._container.close()

    def _blocks(self) -> Iterator[PcmBlock]:
        try:
            block, self._first = self._first, None
            while block is not None:
                if block.sample_rate != self.sample_rate or block.samples.shape[0] != self.channels:
                    raise InputError(
                        f"audio {self.path} changes sample rate or channel count after "
                        f"{self._decoded_s:.1f} s; convert it to one format first (e.g. a WAV file)"
                    )
                yield block
                block = self._next_block(unreadable=self._damaged)
        finally:
            self.close()

    def _next_block(self, unreadable: Callable[[str], InputError]) -> PcmBlock | None:
        """Decode up to the next non-empty frame; None at the end of the file."""
        try:
            for frame in self._frames:
                if frame.samples:
                    samples = _to_float32(frame)
                    if not np.isfinite(samples).all():
                        raise InputError(f"audio {self.path} holds NaN or infinite samples after {self._decoded_s:.1f} s; repair or re-export the file")
                    np.clip(samples, -1.0, 1.0, out=samples)
                    self._decoded_s += frame.samples / frame.sample_rate
                    return PcmBlock(samples=samples, sample_rate=frame.sample_rate)
        except (OSError, av.error.FFmpegError) as err:
            raise unreadable(getattr(err, "strerror", None) or str(err)) from err
        return None

    def _unreadable(self, reason: str) -> InputError:
        return InputError(f"cannot read audio {self.path}: {reason}; {_FORMATS_HINT}")

    def _damaged(self, reason: str) -> InputError:
        return InputError(f"audio {self.path} is damaged after {self._decoded_s:.1f} s ({reason}); repair or re-export the file")


def _header_duration(container: av.container.InputContainer, stream: av.AudioStream) -> float | None:
    if stream.duration is not None and stream.time_base is not None:
        return float(stream.duration * stream.time_base)
    if container.duration is not None:
        return container.duration / av.time_base
    return None


def _to_float32(frame: av.AudioFrame) -> np.ndarray:
    """Any PCM sample format (planar or packed, integer or float) as float32 [channels, n] in [-1, 1]; over 2 channels: mono."""
    data = frame.to_ndarray()
    if not frame.format.is_planar:  # packed: one row of interleaved samples
        data = data.reshape(frame.samples, frame.layout.nb_channels).T
    if data.dtype.kind == "f":
        samples = data.astype(np.float32)  # clipped by the caller, once it has refused NaN and infinity
    elif data.dtype.kind == "u":  # u8 is offset binary around 128
        samples = (data.astype(np.float32) - 128.0) / 128.0
    else:
        samples = data.astype(np.float32) / float(2 ** (8 * data.dtype.itemsize - 1))
    if samples.shape[0] > 2:  # 5.1, 7.1, an 8-track recorder: the mean of every channel
        samples = samples.mean(axis=0, keepdims=True)
    return np.ascontiguousarray(samples)
