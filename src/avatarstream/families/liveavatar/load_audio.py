"""Load wav2vec2-large-xlsr-53-english from the Wan2.2-S2V-14B folder: its processor settings and its network.

Both are read by avatarstream (JSON parsed here, weights through the shared
wav2vec2 reader), never through ``from_pretrained``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch
from transformers import Wav2Vec2FeatureExtractor, Wav2Vec2Model

from avatarstream.components.wan.load_wav2vec2 import read_processor, read_wav2vec2


@dataclass
class AudioEncoder:
    extractor: Wav2Vec2FeatureExtractor
    network: Wav2Vec2Model


def load_audio_encoder(folder: Path, dtype: torch.dtype) -> AudioEncoder:
    return AudioEncoder(read_processor(folder), read_wav2vec2(folder, dtype))
