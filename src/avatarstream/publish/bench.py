"""Encoder throughput: how many frames per second a backend encodes (720p by default).

Run ``python -m avatarstream.publish.bench`` for a report; tests call
``encode_throughput`` small. Frames are a moving gradient, so x264 has real
motion to code, with their share of a tone; the figure includes the RGB to
YUV conversion and AAC, i.e. everything the publisher's encoder thread does.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass

import numpy as np

from avatarstream.publish.encoders import BACKENDS, create_encoder
from avatarstream.publish.media import MediaChunk
from avatarstream.publish.settings import EncoderSettings


@dataclass(frozen=True)
class Throughput:
    encoder: str
    width: int
    height: int
    frames: int
    seconds: float

    @property
    def fps(self) -> float:
        return self.frames / self.seconds


def synthetic_chunk(first: int, frames: int, settings: EncoderSettings) -> MediaChunk:
    """A diagonal gradient that moves a few pixels per frame, plus a 440 Hz tone."""
    ys, xs = np.mgrid[0 : settings.height, 0 : settings.width]
    images = np.empty((frames, settings.height, settings.width, 3), np.uint8)
    for i in range(frames):
        phase = (xs + ys + 4 * (first + i)) % 256
        images[i] = np.stack([phase, 255 - phase, (phase * 2) % 256], axis=-1)
    rate = settings.audio_rate
    start, stop = first * rate // settings.fps, (first + frames) * rate // settings.fps
    tone = 0.3 * np.sin(2 * np.pi * 440 * np.arange(start, stop) / rate).astype(np.float32)
    return MediaChunk(first, images, np.repeat(tone[None], settings.audio_channels, axis=0))


def encode_throughput(encoder: str, settings: EncoderSettings, frames: int = 100, per_chunk: int = 25) -> Throughput:
    """Encode ``frames`` frames with the named backend; the timer covers encoding only, not frame synthesis."""
    chunks = [synthetic_chunk(first, min(per_chunk, frames - first), settings) for first in range(0, frames, per_chunk)]
    with create_encoder(encoder, settings) as backend:
        start = time.perf_counter()
        packets = sum(len(backend.encode(chunk)) for chunk in chunks) + len(backend.flush())
        seconds = time.perf_counter() - start
    if not packets:
        raise RuntimeError(f"{encoder} produced no packets")
    return Throughput(encoder, settings.width, settings.height, frames, seconds)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--encoder", nargs="+", choices=BACKENDS, default=list(BACKENDS))
    parser.add_argument("--width", type=int, default=1280)
    parser.add_argument("--height", type=int, default=720)
    parser.add_argument("--fps", type=int, default=25)
    parser.add_argument("--frames", type=int, default=250)
    parser.add_argument("--preset", default="veryfast")
    args = parser.parse_args(argv)
    settings = EncoderSettings(width=args.width, height=args.height, fps=args.fps, preset=args.preset)
    for name in args.encoder:
        result = encode_throughput(name, settings, args.frames)
        print(
            f"{name:10s} {result.width}x{result.height} preset={settings.preset}: "
            f"{result.fps:6.1f} fps ({result.frames} frames in {result.seconds:.2f} s, {result.fps / settings.fps:.2f}x real time)"
        )


if __name__ == "__main__":
    main()
