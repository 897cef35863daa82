"""Load chinese-wav2vec2-base as downloaded: a Hugging Face folder with ``model.safetensors`` or ``pytorch_model.bin``.

The checkpoint is the pre-training one (``wav2vec2.`` prefix, quantizer and
projection heads that inference ignores, weight norm stored as
``weight_g``/``weight_v``); it is mapped onto transformers' ``Wav2Vec2Model``.
``pytorch_model.bin`` is read weights-only.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
from transformers import Wav2Vec2Config, Wav2Vec2Model

from avatarstream.errors import InputError
from avatarstream.models.infinitetalk.audio_features import resample_to_video_rate
from avatarstream.weights.files import StateDict, read_pth, read_safetensors
from avatarstream.weights.meta_load import MetaLoader, empty_weights
from avatarstream.weights.sandbox import inside

PRETRAINING_HEADS = ("quantizer.", "project_q.", "project_hid.", "lm_head.")
WEIGHT_NORM = {"weight_g": "parametrizations.weight.original0", "weight_v": "parametrizations.weight.original1"}


def wav2vec2_config(folder: Path) -> Wav2Vec2Config:
    """The folder's ``config.json``, parsed here (never through ``from_pretrained``, which could be asked to run code)."""
    path = inside(folder, folder / "config.json")
    expected = f"expected a wav2vec2 config ({folder.name})"
    try:
        raw = json.loads(path.read_text())
    except (OSError, ValueError) as exc:  # json.JSONDecodeError and UnicodeDecodeError are ValueErrors
        raise InputError(f"cannot read {path}: {exc}; {expected}") from exc
    if not isinstance(raw, dict):
        raise InputError(f"{path} holds a JSON {type(raw).__name__}, not an object; {expected}")
    model_type = raw.get("model_type")
    if model_type != "wav2vec2":
        raise InputError(f"{path} is a {model_type!r} model; the audio encoder must be wav2vec2 ({folder.name})")
    try:
        return Wav2Vec2Config.from_dict(raw)
    except (TypeError, ValueError) as exc:
        raise InputError(f"invalid {path}: {exc}; {expected}") from exc


def to_model_keys(state: StateDict) -> StateDict:
    """Pre-training (or bare-model) keys -> ``Wav2Vec2Model`` keys; pre-training heads dropped."""
    out: StateDict = {}
    for key, tensor in state.items():
        if key.startswith(PRETRAINING_HEADS):
            continue
        key = key.removeprefix("wav2vec2.")
        stem, _, leaf = key.rpartition(".")
        out[f"{stem}.{WEIGHT_NORM[leaf]}" if leaf in WEIGHT_NORM else key] = tensor
    return out


def read_weights(folder: Path) -> tuple[StateDict, Path]:
    for name, reader in (("model.safetensors", read_safetensors), ("pytorch_model.bin", read_pth)):
        path = folder / name
        if path.is_file():
            inside(folder, path)
            return reader(path), path
    raise InputError(f"no model.safetensors or pytorch_model.bin in {folder}; download the wav2vec2 weights ({folder.name}) there")


def load_wav2vec2(folder: Path, dtype: torch.dtype) -> Wav2Vec2Model:
    """chinese-wav2vec2-base, made to resample its CNN features to the video rate (as InfiniteTalk was trained)."""
    network = read_wav2vec2(folder, dtype)
    resample_to_video_rate(network)
    return network


def read_wav2vec2(folder: Path, dtype: torch.dtype) -> Wav2Vec2Model:
    """Any wav2vec2 checkpoint folder (pre-training, CTC or bare model) as transformers' ``Wav2Vec2Model``."""
    config = wav2vec2_config(folder)
    with empty_weights():
        network = Wav2Vec2Model(config)
    state, path = read_weights(folder)
    loader = MetaLoader(network, "wav2vec2 audio encoder", dtype)
    loader.load(to_model_keys(state), path)
    return loader.finish([path])
