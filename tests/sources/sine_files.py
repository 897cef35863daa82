"""Write sine-wave audio files with PyAV itself, so tests need no fixtures on disk."""

from __future__ import annotations

import math
from pathlib import Path

import av
import numpy as np

LAYOUTS = {1: "mono", 2: "stereo"}
FREQ_HZ = 440.0


def sine(start: int, n: int, rate: int, channels: int) -> np.ndarray:
    """float32 [channels, n] half-scale sine; channel c is phase-shifted so channels differ."""
    t = np.arange(start, start + n) / rate
    return np.stack([0.5 * np.sin(2 * math.pi * FREQ_HZ * t + c) for c in range(channels)]).astype(np.float32)


def _as_format(wave: np.ndarray, fmt: av.AudioFormat) -> np.ndarray:
    """Convert float [channels, n] to the array PyAV expects for ``fmt``."""
    if fmt.name.startswith("u8"):
        wave = np.round(wave * 127 + 128).astype(np.uint8)
    elif fmt.name.startswith("s16"):
        wave = (wave * 32767).astype(np.int16)
    elif fmt.name.startswith("s32"):
        wave = (wave * (2**31 - 1)).astype(np.int32)
    if not fmt.is_planar:
        wave = wave.T.reshape(1, -1)
    return np.ascontiguousarray(wave)


def write_sine(path: Path, codec: str, rate: int, channels: int, seconds: float, pcm_step: int = 4096) -> int:
    """Encode ``seconds`` of sine into ``path``; returns the number of samples written.

    ``pcm_step`` is the frame size for codecs without a fixed one (PCM, FLAC).
    """
    total = round(seconds * rate)
    with av.open(str(path), "w") as out:
        stream = out.add_stream(codec, rate=rate, layout=LAYOUTS[channels])
        stream.codec_context.options = {"strict": "experimental"}
        out.start_encoding()
        step = stream.codec_context.frame_size or pcm_step
        for start in range(0, total, step):
            n = min(step, total - start)
            data = _as_format(sine(start, n, rate, channels), stream.format)
            frame = av.AudioFrame.from_ndarray(data, format=stream.format.name, layout=LAYOUTS[channels])
            frame.sample_rate = rate
            frame.pts = start
            out.mux(stream.encode(frame))
        out.mux(stream.encode(None))
    return total
