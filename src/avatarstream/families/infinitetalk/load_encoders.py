"""Load InfiniteTalk's text encoder (UMT5-XXL) and image encoder (CLIP ViT-H/14) from either Wan download layout.

Original layout: Wan's own state dicts (``models_t5_umt5-xxl-enc-bf16.pth``,
``models_clip_open-clip-xlm-roberta-large-vit-huge-14.pth``), sizes read from
the tensor shapes, keys converted. Diffusers layout: transformers folders
(``text_encoder/``, ``image_encoder/``) with a ``config.json``. Either way the
network is built on the meta device and filled tensor by tensor.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import torch
from transformers import AutoTokenizer, CLIPVisionConfig, CLIPVisionModel, PreTrainedTokenizerBase, UMT5Config, UMT5EncoderModel

from avatarstream.errors import InputError
from avatarstream.families.infinitetalk.layout import CLIP_FILE, T5_FILE, T5_TOKENIZER_DIR, Layout
from avatarstream.models.infinitetalk.image_encoder import (
    CLIP_MEAN,
    CLIP_STD,
    ImageEncoder,
    clip_vision_config_from_wan,
    convert_open_clip_visual_to_transformers,
    vision_model_tensors,
)
from avatarstream.models.infinitetalk.text_encoder import (
    EMBEDDING_KEYS,
    TextEncoder,
    convert_wan_t5_to_transformers,
    umt5_config_from_wan,
)
from avatarstream.weights.files import ShardedCheckpoint, StateDict, read_pth
from avatarstream.weights.meta_load import MetaLoader, empty_weights
from avatarstream.weights.sandbox import all_inside, inside

T5_NAME = "text encoder (UMT5-XXL)"
CLIP_NAME = "image encoder (CLIP ViT-H/14)"


def load_text_encoder(base: Path, layout: Layout, dtype: torch.dtype) -> TextEncoder:
    """The UMT5 encoder and its tokenizer from the Wan base folder ``base``."""
    if layout == "original":
        network = _load_wan_t5(inside(base, base / T5_FILE), dtype)
        tokenizer = _load_tokenizer(inside(base, base / T5_TOKENIZER_DIR))
    else:
        network = _load_transformers_t5(inside(base, base / "text_encoder"), dtype)
        tokenizer = _load_tokenizer(inside(base, base / "tokenizer"))
    return TextEncoder(network, tokenizer)


def load_image_encoder(base: Path, layout: Layout, dtype: torch.dtype) -> ImageEncoder:
    """The CLIP vision tower from the Wan base folder ``base`` (the CLIP text tower and its tokenizer are not needed)."""
    if layout == "original":
        return ImageEncoder(_load_wan_clip(inside(base, base / CLIP_FILE), dtype))
    mean, std = _read_normalization(inside(base, base / "image_processor" / "preprocessor_config.json"))
    return ImageEncoder(_load_transformers_clip(inside(base, base / "image_encoder"), dtype), mean, std)


def _load_wan_t5(path: Path, dtype: torch.dtype) -> UMT5EncoderModel:
    state = read_pth(path)
    expected = f"expected Wan's UMT5-XXL encoder state dict ({T5_FILE})"
    try:
        config = umt5_config_from_wan({key: tuple(tensor.shape) for key, tensor in state.items()})
        tensors = convert_wan_t5_to_transformers(state)
    except KeyError as exc:
        raise InputError(f"{path} lacks tensor {exc}; {expected}") from exc
    except ValueError as exc:
        raise InputError(f"{path}: {exc}; {expected}") from exc
    with empty_weights():
        network = UMT5EncoderModel(config)
    loader = MetaLoader(network, T5_NAME, dtype)
    loader.load(_tie_embedding(tensors, dtype), path)
    return _tied(loader.finish([path]))


def _load_transformers_t5(folder: Path, dtype: torch.dtype) -> UMT5EncoderModel:
    config_path = inside(folder, folder / "config.json")
    raw = _read_config(config_path, "umt5")
    config = _config_from_dict(UMT5Config, raw, config_path)
    checkpoint = ShardedCheckpoint.open(folder, "model")
    with empty_weights():
        network = UMT5EncoderModel(config)
    loader = MetaLoader(network, T5_NAME, dtype)
    for path, shard in checkpoint.shards():
        loader.load(_tie_embedding(shard, dtype), path)
        del shard
    return _tied(loader.finish([checkpoint.source]))


def _tie_embedding(tensors: StateDict, dtype: torch.dtype) -> StateDict:
    """One token embedding under both of UMT5's tied names, cast once (a file may hold it under either name)."""
    present = [key for key in EMBEDDING_KEYS if key in tensors]
    if not present:
        return tensors
    embedding = tensors[present[0]].to(dtype)
    return {**tensors, **dict.fromkeys(EMBEDDING_KEYS, embedding)}


def _tied(network: UMT5EncoderModel) -> UMT5EncoderModel:
    """One Parameter for both names: two sharing storage would become two copies on ``.to(device)``."""
    network.encoder.embed_tokens.weight = network.shared.weight
    return network


def _load_wan_clip(path: Path, dtype: torch.dtype) -> CLIPVisionModel:
    state = read_pth(path)
    expected = f"expected Wan's open-clip XLM-RoBERTa ViT-H/14 state dict ({CLIP_FILE})"
    try:
        config = clip_vision_config_from_wan({key: tuple(tensor.shape) for key, tensor in state.items()})
        tensors = convert_open_clip_visual_to_transformers(state)
    except KeyError as exc:
        raise InputError(f"{path} lacks tensor {exc}; {expected}") from exc
    except ValueError as exc:
        raise InputError(f"{path}: {exc}; {expected}") from exc
    return _fill_clip(config, [(path, tensors)], path, dtype)


def _load_transformers_clip(folder: Path, dtype: torch.dtype) -> CLIPVisionModel:
    config_path = inside(folder, folder / "config.json")
    raw = _read_config(config_path, "clip_vision_model", "clip")
    if raw["model_type"] == "clip":  # a full CLIP config: its vision part
        vision = raw.get("vision_config")
        if not isinstance(vision, dict):
            raise InputError(f"{config_path} is a CLIP config without a vision_config; expected the image encoder's config")
        raw = vision
    config = _config_from_dict(CLIPVisionConfig, raw, config_path)
    checkpoint = ShardedCheckpoint.open(folder, "model")
    return _fill_clip(config, checkpoint.shards(), checkpoint.source, dtype)


def _fill_clip(config: CLIPVisionConfig, shards: Iterable[tuple[Path, StateDict]], source: Path, dtype: torch.dtype) -> CLIPVisionModel:
    """Build on meta and fill from ``CLIPVisionModelWithProjection``-named tensors (see ``vision_model_tensors``)."""
    with empty_weights():
        network = CLIPVisionModel(config)
    loader = MetaLoader(network, CLIP_NAME, dtype)
    for path, tensors in shards:
        loader.load(vision_model_tensors(tensors), path)
        del tensors
    return loader.finish([source])


def _load_tokenizer(folder: Path) -> PreTrainedTokenizerBase:
    if not folder.is_dir():
        raise InputError(f"tokenizer folder {folder} not found; expected the UMT5 tokenizer (tokenizer.json, tokenizer_config.json) there")
    _refuse_custom_code(folder)
    try:
        # Never run code from the folder (an ``auto_map`` config asks for it, and would prompt on stdin): refused instead.
        return AutoTokenizer.from_pretrained(str(all_inside(folder)), local_files_only=True, trust_remote_code=False)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise InputError(f"cannot load the tokenizer in {folder}: {exc}; expected the UMT5 tokenizer files (tokenizer.json, tokenizer_config.json)") from exc


def _refuse_custom_code(folder: Path) -> None:
    """A config with an ``auto_map`` asks to import Python from the folder; avatarstream never does (nor asks on stdin)."""
    for name in ("tokenizer_config.json", "config.json"):
        path = inside(folder, folder / name)
        if path.is_file() and "auto_map" in _read_json(path):
            raise InputError(
                f"{path} has an 'auto_map': it asks to run Python code from the weights folder, which avatarstream never does; "
                "use the model's own tokenizer files (tokenizer.json, tokenizer_config.json without auto_map)"
            )


def _read_json(path: Path) -> dict[str, Any]:
    try:
        raw = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"cannot read {path}: {exc}; expected a JSON file there") from exc
    if not isinstance(raw, dict):
        raise InputError(f"{path} holds no JSON object; expected a config")
    return raw


def _read_config(path: Path, *model_types: str) -> dict[str, Any]:
    raw = _read_json(path)
    if raw.get("model_type") not in model_types:
        raise InputError(f"{path} describes a {raw.get('model_type')!r} model; expected model_type {' or '.join(map(repr, model_types))}")
    return raw


def _config_from_dict(cls: Any, raw: dict[str, Any], path: Path) -> Any:
    try:
        return cls.from_dict(raw)
    except (TypeError, ValueError) as exc:
        raise InputError(f"invalid {path}: {exc}; expected a transformers {cls.__name__} config") from exc


def _read_normalization(path: Path) -> tuple[list[float], list[float]]:
    """CLIP mean and std from Diffusers' ``image_processor/preprocessor_config.json``."""
    raw = _read_json(path)
    mean, std = raw.get("image_mean", list(CLIP_MEAN)), raw.get("image_std", list(CLIP_STD))  # CLIPImageProcessor defaults
    if not (_three_numbers(mean) and _three_numbers(std)):
        raise InputError(f"{path} has image_mean {mean!r} and image_std {std!r}; expected three numbers each (RGB)")
    return [float(m) for m in mean], [float(s) for s in std]


def _three_numbers(value: object) -> bool:
    return isinstance(value, list) and len(value) == 3 and all(isinstance(v, (int, float)) for v in value)
