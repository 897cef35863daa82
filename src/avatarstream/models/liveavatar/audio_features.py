"""From speech to the S2V DiT's audio input: wav2vec2 hidden states at 50 Hz, resampled to 30 Hz, one bucket per video frame.

wav2vec2-large-xlsr-53-english gives 25 hidden states (embedding + 24 layers);
the last one is the encoder's output after its final LayerNorm (transformers
5 returns the pre-norm state in ``hidden_states``, so it is taken from
``last_hidden_state``). The 50 Hz sequence is resampled linearly to 30 Hz, and
video frame k (25 fps) reads 30 Hz row ``round(k * 30 / 25)``; rows past the
end of the audio read zeros.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from transformers import Wav2Vec2FeatureExtractor, Wav2Vec2Model

SAMPLE_RATE = 16000
FPS = 25
#: The rate the hidden states are resampled to before video frames pick theirs.
FEATURE_RATE = 30
#: wav2vec2's CNN output rate.
CNN_RATE = 50


def normalize(extractor: Wav2Vec2FeatureExtractor, waveform: np.ndarray) -> torch.Tensor:
    """Mono float samples at 16 kHz -> the processor's input values [N] (zero mean, unit variance when configured)."""
    return torch.as_tensor(extractor(waveform, sampling_rate=SAMPLE_RATE, return_tensors="np").input_values[0])


def hidden_states(model: Wav2Vec2Model, input_values: torch.Tensor) -> torch.Tensor:
    """Input values [N] -> every hidden state [layers + 1, frames at 50 Hz, hidden], the last after the final norm.

    ``model`` is the backbone of the checkpoint's ``Wav2Vec2ForCTC`` (its CTC head is never used).
    """
    out = model(input_values[None].to(model.dtype), output_hidden_states=True)
    states = [*out.hidden_states[:-1], out.last_hidden_state]
    return torch.cat(states, dim=0).float()


def to_feature_rate(states: torch.Tensor) -> torch.Tensor:
    """[layers, n50, hidden] -> [layers, n30, hidden], n30 = n50 * 30 / 50 rounded down (integer arithmetic)."""
    length = states.shape[1] * FEATURE_RATE // CNN_RATE
    return F.interpolate(states.transpose(1, 2), size=length, mode="linear", align_corners=True).transpose(1, 2)


def bucket_indices(first_frame: int, frames: int, fps: int = FPS) -> torch.Tensor:
    """30 Hz row of each video frame in [first_frame, first_frame + frames): round(k * 30 / fps), halves up."""
    k = torch.arange(first_frame, first_frame + frames, dtype=torch.int64)
    return (2 * k * FEATURE_RATE + fps) // (2 * fps)


def frame_features(features: torch.Tensor, indices: torch.Tensor, offset: int = 0) -> torch.Tensor:
    """[layers, n30, hidden] (row 0 = 30 Hz row ``offset``) -> the DiT input [layers, hidden, len(indices)]; rows not held are zero."""
    rows = indices - offset
    valid = (rows >= 0) & (rows < features.shape[1])
    out = features.new_zeros(features.shape[0], len(indices), features.shape[2])
    out[:, valid] = features[:, rows[valid]]
    return out.transpose(1, 2)
