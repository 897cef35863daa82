"""Read a wav2vec2 audio encoder as downloaded: a Hugging Face folder with ``model.safetensors`` or ``pytorch_model.bin``.

The Wan-based families take theirs from different checkpoints: a pre-training
one (``wav2vec2.`` prefix, quantizer and projection heads that inference
ignores), a CTC one, or a bare model; weight norm may be stored as
``weight_g``/``weight_v``. Each is mapped onto transformers' ``Wav2Vec2Model``.
``pytorch_model.bin`` is read weights-only.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
from huggingface_hub.errors import StrictDataclassError
from transformers import Wav2Vec2Config, Wav2Vec2FeatureExtractor, Wav2Vec2Model

from avatarstream.errors import InputError
from avatarstream.weights.config_values import MAX_HEADS, MAX_LAYERS, ConfigValues, built_from, read_json_object
from avatarstream.weights.files import StateDict, read_pth, read_safetensors
from avatarstream.weights.memory_check import meta_bytes, require_fits
from avatarstream.weights.meta_load import MetaLoader, empty_weights
from avatarstream.weights.sandbox import inside

PRETRAINING_HEADS = ("quantizer.", "project_q.", "project_hid.", "lm_head.")
WEIGHT_NORM = {"weight_g": "parametrizations.weight.original0", "weight_v": "parametrizations.weight.original1"}


def wav2vec2_config(folder: Path) -> Wav2Vec2Config:
    """The folder's ``config.json``, parsed here (never through ``from_pretrained``, which could be asked to run code),
    its sizes checked for type and range before transformers sees them."""
    path = inside(folder, folder / "config.json")
    expected = f"expected a wav2vec2 config ({folder.name})"
    raw = read_json_object(path, expected)
    model_type = raw.get("model_type")
    if model_type != "wav2vec2":
        raise InputError(f"{path} is a {model_type!r} model; the audio encoder must be wav2vec2 ({folder.name})")
    values = ConfigValues(raw, path, expected)
    hidden = values.count("hidden_size", 768)
    values.divides("hidden_size", hidden, values.count("num_attention_heads", 12, high=MAX_HEADS), "num_attention_heads")
    values.divides("hidden_size", hidden, values.count("num_conv_pos_embedding_groups", 16, high=MAX_HEADS), "num_conv_pos_embedding_groups")
    values.count("num_hidden_layers", 12, high=MAX_LAYERS)
    values.count("intermediate_size", 3072)
    values.count("num_conv_pos_embeddings", 128, high=4096)
    layers = len(values.counts("conv_dim", (512,) * 7, length=range(1, 17)))
    values.counts("conv_kernel", (10, 3, 3, 3, 3, 2, 2), length=range(layers, layers + 1), high=4096)
    values.counts("conv_stride", (5, 2, 2, 2, 2, 2, 2), length=range(layers, layers + 1), high=4096)
    try:
        return Wav2Vec2Config.from_dict(raw)
    except (TypeError, ValueError, StrictDataclassError) as exc:
        raise InputError(f"invalid {path}: {' '.join(str(exc).split())}; {expected}") from exc


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


def read_wav2vec2(folder: Path, dtype: torch.dtype) -> Wav2Vec2Model:
    """Any wav2vec2 checkpoint folder (pre-training, CTC or bare model) as transformers' ``Wav2Vec2Model``."""
    config = wav2vec2_config(folder)
    with built_from(folder / "config.json", f"expected a wav2vec2 config ({folder.name})"):
        require_fits(meta_bytes(lambda: Wav2Vec2Model(config), torch.finfo(dtype).bits // 8), "an audio encoder", folder / "config.json")
        with empty_weights():
            network = Wav2Vec2Model(config)
    state, path = read_weights(folder)
    loader = MetaLoader(network, "wav2vec2 audio encoder", dtype)
    loader.load(to_model_keys(state), path)
    return loader.finish([path])


#: Processor settings read from preprocessor_config.json; anything else there is ignored.
PROCESSOR_KEYS = ("do_normalize", "feature_size", "padding_value", "sampling_rate", "return_attention_mask")


def read_processor(folder: Path) -> Wav2Vec2FeatureExtractor:
    """The folder's feature-extractor settings (``preprocessor_config.json``, parsed here), or wav2vec2's defaults."""
    path = inside(folder, folder / "preprocessor_config.json")
    if not path.is_file():
        return Wav2Vec2FeatureExtractor(do_normalize=True)
    try:
        raw = json.loads(path.read_text())
        return Wav2Vec2FeatureExtractor(**{k: raw[k] for k in PROCESSOR_KEYS if k in raw})
    except (OSError, ValueError, TypeError) as exc:
        raise InputError(f"cannot read {path}: {exc}; expected wav2vec2's preprocessor_config.json") from exc
