"""Client audio in any shape -> float32 mono at the session rate.

Raw PCM arrives in pieces of a declared format; encoded audio arrives as
whole clips (a file upload, or one WebSocket message holding a WAV/MP3/FLAC/OGG
clip). Both are resampled with one stateful resampler per input, so pieces
join without clicks. Clips are stored under names the server chooses and
decoded lazily, so a long upload costs disk, not memory.
"""

from __future__ import annotations

from pathlib import Path

import av
import numpy as np

from avatarstream.errors import InputError
from avatarstream.sources.audio_file import AudioFileSource

#: The rate every session's live audio is kept at (the output audio rate, so speech is never downsampled).
RATE = 48000
PCM_FORMATS: dict[str, np.dtype] = {"s16le": np.dtype("<i2"), "f32le": np.dtype("<f4")}
MAX_PCM_RATE = 192000
#: The most audio one PCM message may carry (clients send 20 ms to 1 s pieces): what one message costs once decoded is bounded.
MAX_MESSAGE_S = 10.0


class Resampler:
    """Any rate and channel count -> mono float32 at ``RATE``, continuous across calls."""

    def __init__(self, rate: int, channels: int) -> None:
        self.rate = rate
        self.layout = "mono" if channels == 1 else "stereo"
        self._resampler = av.AudioResampler(format="flt", layout="mono", rate=RATE)

    def feed(self, samples: np.ndarray) -> np.ndarray:
        """``samples``: float32 [channels, n]; returns the mono samples that are ready (none for none: FFmpeg's resampler
        fails on an empty frame, which an empty PCM message would make)."""
        if samples.shape[-1] == 0:
            return np.zeros(0, np.float32)
        frame = av.AudioFrame.from_ndarray(np.ascontiguousarray(samples, dtype=np.float32), format="fltp", layout=self.layout)
        frame.sample_rate = self.rate
        parts = [out.to_ndarray().reshape(-1) for out in self._resampler.resample(frame)]
        return np.concatenate(parts) if parts else np.zeros(0, np.float32)

    def close(self) -> None:
        """Free FFmpeg's filter graph (and its worker threads) now, not whenever the cyclic garbage collector runs."""
        vars(self).pop("_resampler", None)


class PcmDecoder:
    """Raw little-endian PCM bytes of one declared format, as a client streams them."""

    def __init__(self, fmt: str, rate: int, channels: int) -> None:
        if fmt not in PCM_FORMATS:
            raise InputError(f"audio format {fmt!r} is not supported; use one of {', '.join(PCM_FORMATS)} or 'encoded'")
        if not 8000 <= rate <= MAX_PCM_RATE:
            raise InputError(f"sample rate {rate} is out of range; use 8000..{MAX_PCM_RATE} Hz")
        if channels not in (1, 2):
            raise InputError(f"channels must be 1 or 2, got {channels}")
        self.dtype = PCM_FORMATS[fmt]
        self.rate = rate
        self.channels = channels
        self._resampler = Resampler(rate, channels)

    def seconds(self, data: bytes) -> float:
        """How much audio ``data`` holds, from its length alone (before anything is decoded); refuses a partial frame or
        a message longer than MAX_MESSAGE_S."""
        frame_bytes = self.dtype.itemsize * self.channels
        if len(data) % frame_bytes:
            raise InputError(f"a PCM message must hold whole sample frames ({frame_bytes} bytes each), got {len(data)} bytes")
        seconds = len(data) / frame_bytes / self.rate
        if seconds > MAX_MESSAGE_S:
            raise InputError(f"a PCM message of {seconds:.1f} s is longer than {MAX_MESSAGE_S:g} s; send the audio in smaller pieces as it is recorded")
        return seconds

    def decode(self, data: bytes) -> np.ndarray:
        self.seconds(data)
        raw = np.frombuffer(data, self.dtype).reshape(-1, self.channels).T
        if self.dtype.kind == "i":
            samples = raw.astype(np.float32) / 32768.0
        else:
            samples = np.nan_to_num(raw, nan=0.0, posinf=1.0, neginf=-1.0).clip(-1.0, 1.0)
        return self._resampler.feed(samples)

    def close(self) -> None:
        self._resampler.close()


class ClipSegment:
    """A stored, validated audio clip read lazily in ``RATE`` mono; the file is removed when closed."""

    def __init__(self, source: AudioFileSource, path: Path) -> None:
        self.path = path
        self._source = source
        self.sample_rate = source.sample_rate  # the clip's own, before resampling
        self._blocks = iter(self._source)
        self._resampler = Resampler(self._source.sample_rate, self._source.channels)
        self._pending = np.zeros(0, np.float32)
        self._read = 0
        self.duration_s = self._source.duration_s

    def read(self, n: int) -> np.ndarray:
        """Up to ``n`` samples; an empty array once the clip is used up."""
        while self._pending.size < n:
            block = next(self._blocks, None)
            if block is None:
                break
            self._pending = np.concatenate([self._pending, self._resampler.feed(block.samples)])
        out, self._pending = self._pending[:n], self._pending[n:]
        self._read += out.size
        return out

    @property
    def remaining_s(self) -> float:
        return max((self.duration_s or 0.0) - self._read / RATE, self._pending.size / RATE)

    def close(self) -> None:
        self._resampler.close()
        self._source.close()
        self.path.unlink(missing_ok=True)


class PcmSegment:
    """Decoded samples waiting to be spoken."""

    def __init__(self, samples: np.ndarray) -> None:
        self._samples = samples
        self._offset = 0

    def read(self, n: int) -> np.ndarray:
        out = self._samples[self._offset : self._offset + n]
        self._offset += out.size
        return out

    @property
    def remaining_s(self) -> float:
        return (self._samples.size - self._offset) / RATE

    def close(self) -> None:
        self._samples = np.zeros(0, np.float32)
