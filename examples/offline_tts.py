"""The examples' stand-in for a TTS service: a recording, or espeak-ng's voice, so that no cloud key is needed."""

from __future__ import annotations

import io
import shutil
import subprocess
import wave
from pathlib import Path

import numpy as np

from avatarstream.sources.audio_file import open_audio_file
from avatarstream.sources.bundled import DEFAULT_SPEECH


def speech(text: str, wav: str | Path | None = None) -> tuple[bytes, int]:
    """``text`` (or the recording ``wav``) as 16-bit mono PCM and its rate; the bundled speech without espeak-ng."""
    if wav is None and shutil.which("espeak-ng"):
        spoken = subprocess.run(["espeak-ng", "--stdout", text], check=True, capture_output=True).stdout
        with wave.open(io.BytesIO(spoken)) as clip:
            return clip.readframes(clip.getnframes()), clip.getframerate()
    with open_audio_file(wav or DEFAULT_SPEECH) as source:
        mono = np.concatenate([block.samples.mean(axis=0) for block in source])
        return (np.clip(mono, -1, 1) * 32767).astype("<i2").tobytes(), source.sample_rate


def pieces(pcm: bytes, rate: int, piece_s: float = 0.02) -> list[bytes]:
    """The PCM in pieces of 20 ms, as a TTS streams its audio."""
    step = round(rate * piece_s) * 2
    return [pcm[i : i + step] for i in range(0, len(pcm), step)]
