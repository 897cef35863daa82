"""From speech to the DiT's audio input: loudness, wav2vec2 features at 25 fps, per-frame windows.

wav2vec2's CNN gives 50 frames/s; the architecture resamples that sequence
linearly to the video rate *before* the feature projection and the
transformer, then stacks the output of every transformer layer. Each video
frame then sees the features of frames -2..+2 around it.
"""

from __future__ import annotations

import threading

import numpy as np
import pyloudnorm
import torch
import torch.nn.functional as F
from transformers import Wav2Vec2Model

from avatarstream.models.infinitetalk.config import AUDIO_WINDOW

SAMPLE_RATE = 16000
FPS = 25
TARGET_LUFS = -23.0


def loudness_normalize(waveform: np.ndarray, sample_rate: int = SAMPLE_RATE, target_lufs: float = TARGET_LUFS) -> np.ndarray:
    """One gain for the whole signal to ``target_lufs`` (ITU-R BS.1770-4); unchanged when loudness is unmeasurable.

    BS.1770 measures over 400 ms blocks: a shorter signal has no loudness and is left as it is.
    """
    meter = pyloudnorm.Meter(sample_rate)
    if waveform.shape[-1] < meter.block_size * sample_rate:
        return waveform
    loudness = meter.integrated_loudness(waveform.astype(np.float64))
    if not np.isfinite(loudness) or abs(loudness) > 100:
        return waveform
    return (waveform * 10 ** ((target_lufs - loudness) / 20)).astype(waveform.dtype)


def feature_frames(num_samples: int, sample_rate: int = SAMPLE_RATE, fps: int = FPS) -> int:
    """How many video-rate feature frames ``num_samples`` of audio give (the architecture truncates).

    Integer arithmetic: the reference's ``int(n / rate * fps)`` loses a frame
    to float rounding on some exact multiples (37120 samples: 57, not 58),
    which would stretch a window's features out of step with the video.
    """
    return num_samples * fps // sample_rate


def reference_feature_frames(num_samples: int, sample_rate: int = SAMPLE_RATE, fps: int = FPS) -> int:
    """The reference CLI's count, ``int(samples / rate * fps)`` in floating point: on exact multiples it can be one short
    of ``feature_frames`` (37120 samples: 57), and the reference fidelity reproduces that."""
    return int(num_samples / sample_rate * fps)


_counts = threading.local()  # a count asked for by the wav2vec2_features call running on this thread


def resample_to_video_rate(network: Wav2Vec2Model) -> None:
    """Make ``network`` resample its CNN features (50 Hz) to video rate before the projection, as trained.

    The target length follows from the input's sample count (or the count the
    running ``wav2vec2_features`` call on this thread asks for), so the hook
    holds no state and sessions may share the network.
    """

    def resample(module: torch.nn.Module, args: tuple[torch.Tensor, ...], cnn: torch.Tensor) -> torch.Tensor:
        frames = getattr(_counts, "frames", None) or feature_frames(args[0].shape[-1])
        return F.interpolate(cnn, size=frames, mode="linear", align_corners=True)

    network.feature_extractor.register_forward_hook(resample)


def wav2vec2_features(network: Wav2Vec2Model, waveform: torch.Tensor, frames: int | None = None) -> torch.Tensor:
    """Mono waveform [N] at 16 kHz -> features [frames, layers, hidden], one row per video frame.

    ``network`` must have been prepared by ``resample_to_video_rate``; ``frames``: how many (default ``feature_frames(N)``).
    """
    _counts.frames = frames
    try:
        out = network(waveform.reshape(1, -1).to(network.dtype), output_hidden_states=True)
    finally:
        _counts.frames = None
    return torch.stack(out.hidden_states[1:], dim=2)[0]


def extend_for_last_chunk(features: torch.Tensor, start: int, frame_num: int) -> torch.Tensor:
    """The architecture's end of audio: before the chunk that reaches the end, mirror the last frames onto it."""
    overhang = start + frame_num - features.shape[0]
    if overhang < 0:
        return features
    tail = features[-(overhang + AUDIO_WINDOW // 2 + 1) :].flip(0)
    return torch.cat([features, tail], dim=0)


def window_indices(start: int, frame_num: int, available: int) -> torch.Tensor:
    """[frame_num, 5] feature indices: frame i sees start+i-2 .. start+i+2, clamped to the features there are."""
    offsets = torch.arange(AUDIO_WINDOW) - AUDIO_WINDOW // 2
    return (start + torch.arange(frame_num)[:, None] + offsets).clamp(0, available - 1)


def audio_windows(features: torch.Tensor, start: int, frame_num: int) -> torch.Tensor:
    """The DiT's audio input for pixel frames [start, start+frame_num): [1, frame_num, 5, layers, hidden]."""
    features = extend_for_last_chunk(features, start, frame_num)
    return features[window_indices(start, frame_num, features.shape[0])][None]
