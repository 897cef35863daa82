"""The encoder interface: MediaChunks in, EncodedPackets (H.264 AVCC + raw AAC) out.

Every backend takes its timestamps from counts, never from a clock: video pts
is the frame index (time base 1/fps), audio pts the number of samples sent
before (time base 1/audio_rate). So audio and video stay in step however long
a session runs, and every backend yields the same timeline for the same input.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np

from avatarstream.lifecycle import ClosesOnExit
from avatarstream.publish.media import MediaChunk
from avatarstream.publish.packets import EncodedPacket, StreamInfo
from avatarstream.publish.settings import EncoderSettings


class Encoder(ABC, ClosesOnExit):
    """Encodes one stream once; ``encode`` chunks in timeline order, then ``flush``, then ``close``.

    Packets come back in decode order per stream, video and audio interleaved
    by time. ``stream_info`` is None until the backend knows its codec headers
    (the PyAV backend at once, GStreamer after its first packets).
    """

    name: str

    def __init__(self, settings: EncoderSettings) -> None:
        self.settings = settings
        self.frames_encoded = 0

    def encode(self, chunk: MediaChunk) -> list[EncodedPacket]:
        """Validate the chunk, encode its frames and audio, return the packets ready so far."""
        self._check_frames(chunk)
        if chunk.first_frame != self.frames_encoded:
            raise ValueError(f"chunk starts at frame {chunk.first_frame} but {self.frames_encoded} frames were written; chunks must be consecutive")
        audio = match_channels(chunk.audio, self.settings.audio_channels)
        packets = self._encode(chunk.frames, audio)
        self.frames_encoded += chunk.num_frames
        return by_time(packets)

    def flush(self) -> list[EncodedPacket]:
        """End of stream: return every packet still held by the codecs."""
        return by_time(self._flush())

    @property
    @abstractmethod
    def stream_info(self) -> StreamInfo | None: ...

    @abstractmethod
    def _encode(self, frames: np.ndarray, audio: np.ndarray) -> list[EncodedPacket]:
        """Encode uint8 RGB frames [T, H, W, 3] and float32 audio [channels, n] that follow the last ones."""

    @abstractmethod
    def _flush(self) -> list[EncodedPacket]: ...

    def close(self) -> None:
        """Release the codecs (idempotent); packets not flushed are lost."""

    def _check_frames(self, chunk: MediaChunk) -> None:
        expected = (self.settings.height, self.settings.width, 3)
        frames = chunk.frames
        if frames.dtype != np.uint8 or frames.ndim != 4 or frames.shape[1:] != expected:
            raise ValueError(
                f"frames must be uint8 RGB [T, {expected[0]}, {expected[1]}, 3] to match the encoder settings, got {frames.dtype} {list(frames.shape)}"
            )


def by_time(packets: list[EncodedPacket]) -> list[EncodedPacket]:
    """Interleave video and audio by decode time (stable, so each stream keeps its order)."""
    return sorted(packets, key=lambda p: p.dts * p.time_base)


def match_channels(audio: np.ndarray, channels: int) -> np.ndarray:
    """Return contiguous float32 [channels, n]: mono is duplicated, multichannel mixed down to mono."""
    audio = np.asarray(audio, dtype=np.float32)
    if audio.ndim != 2:
        raise ValueError(f"audio must be float32 [channels, samples], got shape {list(audio.shape)}")
    have = audio.shape[0]
    if have == channels:
        return np.ascontiguousarray(audio)
    if channels == 1:
        return np.ascontiguousarray(audio.mean(axis=0, keepdims=True))
    if have == 1:
        return np.repeat(audio, channels, axis=0)
    raise ValueError(f"audio has {have} channels; the encoder takes 1 or {channels}")
