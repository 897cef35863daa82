"""Encode a known stream and read what an independent decoder (PyAV) sees in any container."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import av

from avatarstream.publish.encoders import create_encoder
from avatarstream.publish.media import MediaChunk
from avatarstream.publish.packets import EncodedPacket, StreamInfo
from avatarstream.publish.settings import EncoderSettings


def encode_all(backend: str, settings: EncoderSettings, chunks: list[MediaChunk]) -> tuple[StreamInfo, list[EncodedPacket]]:
    with create_encoder(backend, settings) as encoder:
        packets = [p for chunk in chunks for p in encoder.encode(chunk)] + encoder.flush()
        assert encoder.stream_info is not None
        return encoder.stream_info, packets


@dataclass
class Seen:
    frames: int
    width: int
    height: int
    video_s: float  # from the first frame's start to the last frame's end
    audio_s: float  # decoded samples / rate
    keyframe_times: list[float]


def inspect(target: str | Path, **open_options: object) -> Seen:
    """Decode every frame and sample; durations come from timestamps and sample counts, not headers."""
    with av.open(str(target), **open_options) as container:
        video = container.streams.video[0]
        audio = container.streams.audio[0]
        pts, keys, samples, rate = [], [], 0, audio.codec_context.sample_rate
        width = height = 0
        for packet in container.demux(video, audio):
            for frame in packet.decode():
                if packet.stream is video:
                    pts.append(float(frame.pts * frame.time_base))
                    width, height = frame.width, frame.height
                    if frame.key_frame:
                        keys.append(pts[-1])
                else:
                    samples += frame.samples
        step = 1 / float(video.average_rate or video.guessed_rate)
        return Seen(len(pts), width, height, max(pts) - min(pts) + step if pts else 0.0, samples / rate, keys)
