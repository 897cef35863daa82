"""From a buffer of speech to the DiT's audio windows, as FlashHead's stream mode computes them.

The whole buffer (8 s in the reference, zeros before the audio starts) is
normalised to zero mean and unit variance, silence included; wav2vec2's CNN
features are resampled linearly (corners aligned) to one row per video frame
before the projection, and hidden states 1..L are stacked per frame. Frame i
of a chunk then takes the rows i-2..i+2 around it, clamped to the buffer, the
chunk being the buffer's last ``frame_num`` frames.
"""

from __future__ import annotations

import threading
import weakref
from contextvars import ContextVar

import numpy as np
import torch
import torch.nn.functional as F
from transformers import Wav2Vec2FeatureExtractor, Wav2Vec2Model

from avatarstream.models.flashhead.config import AUDIO_WINDOW

SAMPLE_RATE = 16000
FPS = 25


def normalize(extractor: Wav2Vec2FeatureExtractor, samples: np.ndarray) -> torch.Tensor:
    """Mono samples at 16 kHz -> wav2vec2's input values [N] (the processor's normalisation, over the whole buffer)."""
    return torch.as_tensor(extractor(samples, sampling_rate=SAMPLE_RATE, return_tensors="np").input_values[0])


#: The rows the CNN features of the encode running on this thread are resampled to (None: not a FlashHead encode).
_ROWS: ContextVar[int | None] = ContextVar("flashhead_feature_rows", default=None)
_HOOKED: weakref.WeakSet[torch.nn.Module] = weakref.WeakSet()
_HOOKING = threading.Lock()


def _resample(module: torch.nn.Module, inputs: object, cnn: torch.Tensor) -> torch.Tensor | None:
    rows = _ROWS.get()
    return None if rows is None else F.interpolate(cnn, size=rows, mode="linear", align_corners=True)


def frame_features(model: Wav2Vec2Model, values: torch.Tensor, frames: int) -> torch.Tensor:
    """Input values [N] -> hidden states 1..L at one row per video frame: [frames, L, C].

    The CNN's 50 Hz features are resampled to ``frames`` rows before the
    feature projection and the transformer, as the reference's wav2vec2 does:
    by a hook on transformers' feature encoder (its forward stays the
    library's). The hook is set once per model and reads the row count of the
    encode running on its own thread, so sessions encoding at once with other
    buffer lengths never resample with each other's.
    """
    with _HOOKING:
        if model.feature_extractor not in _HOOKED:
            model.feature_extractor.register_forward_hook(_resample)
            _HOOKED.add(model.feature_extractor)
    token = _ROWS.set(frames)
    try:
        out = model(values[None].to(model.dtype), output_hidden_states=True)
    finally:
        _ROWS.reset(token)
    return torch.stack(out.hidden_states[1:], dim=2)[0].float()


def window_indices(frame_num: int, end: int) -> torch.Tensor:
    """[frame_num, 5] rows of the features each of the last ``frame_num`` frames of ``end`` takes (clamped to 0..end-1)."""
    half = AUDIO_WINDOW // 2
    centres = torch.arange(end - frame_num, end)[:, None] + torch.arange(-half, half + 1)[None]
    return centres.clamp(0, end - 1)


def windows(features: torch.Tensor, frame_num: int) -> torch.Tensor:
    """[rows, L, C] -> the DiT's audio input [1, frame_num, 5, L, C] for the chunk ending at the last row."""
    return features[window_indices(frame_num, features.shape[0])][None].contiguous()
