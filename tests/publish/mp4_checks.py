"""Build known MediaChunks and read MP4 files back with PyAV, independently of the writer."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path

import av
import numpy as np

from avatarstream.publish import MediaChunk

TONE_HZ = 440.0


def colour(index: int) -> tuple[int, int, int]:
    """A different solid colour for every frame, away from the clipped extremes."""
    return (32 + index * 37 % 192, 32 + index * 71 % 192, 32 + index * 113 % 192)


def tone(start: int, n: int, rate: int, channels: int) -> np.ndarray:
    t = np.arange(start, start + n) / rate
    return np.repeat((0.5 * np.sin(2 * math.pi * TONE_HZ * t)).astype(np.float32)[None], channels, axis=0)


def make_chunks(sizes: list[int], width: int = 64, height: int = 48, fps: int = 25, rate: int = 48000, channels: int = 2) -> list[MediaChunk]:
    """Consecutive chunks of solid-colour frames with exactly their share of a 440 Hz tone."""
    chunks, first = [], 0
    for size in sizes:
        frames = np.empty((size, height, width, 3), np.uint8)
        for i in range(size):
            frames[i] = colour(first + i)
        start, stop = first * rate // fps, (first + size) * rate // fps
        chunks.append(MediaChunk(first, frames, tone(start, stop - start, rate, channels)))
        first += size
    return chunks


@dataclass
class Decoded:
    """What an independent reader sees in an MP4 file."""

    frames: list[np.ndarray] = field(repr=False)
    width: int
    height: int
    video_codec: str
    average_rate: Fraction
    video_duration_s: float
    keyframes: list[int]
    decode_order_is_display_order: bool
    has_b_frames: bool
    audio_codec: str
    audio_rate: int
    audio_channels: int
    audio_duration_s: float
    audio: np.ndarray = field(repr=False)


def decode(path: Path) -> Decoded:
    with av.open(str(path)) as container:
        frames = [f.to_ndarray(format="rgb24") for f in container.decode(video=0)]
    with av.open(str(path)) as container:
        samples = np.concatenate([f.to_ndarray() for f in container.decode(audio=0)], axis=1)
    with av.open(str(path)) as container:
        video, audio = container.streams.video[0], container.streams.audio[0]
        packets = [p for p in container.demux(video) if p.size]
        pts = [p.pts for p in packets]
        return Decoded(
            frames=frames,
            width=video.codec_context.width,
            height=video.codec_context.height,
            video_codec=video.codec_context.name,
            average_rate=video.average_rate,
            video_duration_s=float(video.duration * video.time_base),
            keyframes=[i for i, p in enumerate(packets) if p.is_keyframe],
            decode_order_is_display_order=pts == sorted(pts) and all(p.pts == p.dts for p in packets),
            has_b_frames=bool(video.codec_context.has_b_frames),
            audio_codec=audio.codec_context.name,
            audio_rate=audio.codec_context.sample_rate,
            audio_channels=audio.codec_context.channels,
            audio_duration_s=float(audio.duration * audio.time_base),
            audio=samples,
        )
