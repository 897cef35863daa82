"""Load wav2vec2-large-xlsr-53-english from the Wan2.2-S2V-14B folder: its processor settings and its network.

Both are read by avatarstream (JSON parsed here, weights through the shared
wav2vec2 reader), never through ``from_pretrained``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import torch
from transformers import Wav2Vec2FeatureExtractor, Wav2Vec2Model

from avatarstream.components.wan.load_wav2vec2 import read_wav2vec2
from avatarstream.errors import InputError
from avatarstream.weights.sandbox import inside

#: Processor settings read from preprocessor_config.json; anything else there is ignored.
PROCESSOR_KEYS = ("do_normalize", "feature_size", "padding_value", "sampling_rate", "return_attention_mask")


@dataclass
class AudioEncoder:
    extractor: Wav2Vec2FeatureExtractor
    network: Wav2Vec2Model


def read_processor(folder: Path) -> Wav2Vec2FeatureExtractor:
    path = inside(folder, folder / "preprocessor_config.json")
    if not path.is_file():
        return Wav2Vec2FeatureExtractor(do_normalize=True)
    try:
        raw = json.loads(path.read_text())
        return Wav2Vec2FeatureExtractor(**{k: raw[k] for k in PROCESSOR_KEYS if k in raw})
    except (OSError, ValueError, TypeError) as exc:
        raise InputError(f"cannot read {path}: {exc}; expected wav2vec2's preprocessor_config.json") from exc


def load_audio_encoder(folder: Path, dtype: torch.dtype) -> AudioEncoder:
    return AudioEncoder(read_processor(folder), read_wav2vec2(folder, dtype))
