"""A known encoded stream for the Kinesis tests, made with PyAV alone, and its decoding.

Frames are encoded into an in-memory MP4 and demuxed again: the MP4 muxer
hands back exactly what ``EncodedPacket`` carries (avcC extradata and
length-prefixed H.264 access units, raw AAC frames with their
AudioSpecificConfig), in decode order.
"""

from __future__ import annotations

import io
import math
from dataclasses import dataclass
from fractions import Fraction

import av
import numpy as np

from avatarstream.publish.packets import EncodedPacket, StreamInfo

WIDTH, HEIGHT, FPS, RATE, CHANNELS = 64, 48, 25, 48000, 2
TONE_HZ = 440.0


def colour(index: int) -> tuple[int, int, int]:
    """A different solid colour for every frame, away from the clipped extremes."""
    return (32 + index * 37 % 192, 32 + index * 71 % 192, 32 + index * 113 % 192)


def tone(start: int, n: int) -> np.ndarray:
    t = np.arange(start, start + n) / RATE
    return np.repeat((0.5 * np.sin(2 * math.pi * TONE_HZ * t)).astype(np.float32)[None], CHANNELS, axis=0)


def encoded_stream(seconds: float, gop: int = FPS) -> tuple[StreamInfo, list[EncodedPacket]]:
    """``seconds`` of solid-colour frames and a 440 Hz tone, keyframe every ``gop`` frames, no B-frames."""
    buffer = io.BytesIO()
    with av.open(buffer, "w", format="mp4") as out:
        video = out.add_stream(
            "libx264",
            rate=FPS,
            options={
                "preset": "ultrafast",
                "tune": "zerolatency",
                "x264-params": f"keyint={gop}:min-keyint={gop}:scenecut=0:bframes=0",
            },
        )
        video.width, video.height, video.pix_fmt = WIDTH, HEIGHT, "yuv420p"
        audio = out.add_stream("aac", rate=RATE, layout="stereo")
        for i in range(round(seconds * FPS)):
            image = np.empty((HEIGHT, WIDTH, 3), np.uint8)
            image[:] = colour(i)
            frame = av.VideoFrame.from_ndarray(image, format="rgb24")
            frame.pts = i
            out.mux(video.encode(frame))
        out.mux(video.encode(None))
        for start in range(0, round(seconds * RATE), 1024):
            samples = av.AudioFrame.from_ndarray(tone(start, 1024), format="fltp", layout="stereo")
            samples.sample_rate, samples.pts, samples.time_base = RATE, start, Fraction(1, RATE)
            out.mux(audio.encode(samples))
        out.mux(audio.encode(None))
    buffer.seek(0)
    with av.open(buffer, "r", format="mp4") as src:
        avcc, asc = src.streams.video[0].codec_context.extradata, src.streams.audio[0].codec_context.extradata
        assert avcc and asc, "the MP4 muxer keeps both codec configurations"
        info = StreamInfo(WIDTH, HEIGHT, FPS, avcc, RATE, CHANNELS, asc)
        packets = [_packet(p) for p in src.demux() if p.size]
    return info, packets


def _packet(packet: av.Packet) -> EncodedPacket:
    assert packet.pts is not None and packet.dts is not None
    if packet.stream.type == "video":
        time_base = Fraction(1, FPS)
        pts, dts = (Fraction(t) * packet.time_base / time_base for t in (packet.pts, packet.dts))
        assert pts.denominator == dts.denominator == 1, "video timestamps must be whole frames"
        return EncodedPacket("video", bytes(packet), int(pts), int(dts), time_base, packet.is_keyframe)
    return EncodedPacket("audio", bytes(packet), packet.pts, packet.dts, Fraction(1, RATE), True)


@dataclass
class Decoded:
    frames: list[np.ndarray]
    audio: np.ndarray  # [channels, samples]


def decode_mkv(data: bytes) -> Decoded:
    """Decode an MKV held in memory (nothing touches the disk)."""
    with av.open(io.BytesIO(data), "r", format="matroska") as container:
        frames = [f.to_ndarray(format="rgb24") for f in container.decode(video=0)]
    with av.open(io.BytesIO(data), "r", format="matroska") as container:
        chunks = [f.to_ndarray() for f in container.decode(audio=0)]
    return Decoded(frames, np.concatenate(chunks, axis=1) if chunks else np.zeros((CHANNELS, 0), np.float32))


def colour_errors(frames: list[np.ndarray]) -> list[float]:
    """Mean absolute error of each frame against the colour it was encoded with."""
    return [float(np.abs(f.astype(int) - colour(i)).mean()) for i, f in enumerate(frames)]
