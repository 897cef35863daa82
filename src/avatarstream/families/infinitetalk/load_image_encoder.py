"""Load InfiniteTalk's image encoder (CLIP ViT-H/14) from either Wan2.1-I2V download layout.

Original layout: Wan's own state dict
(``models_clip_open-clip-xlm-roberta-large-vit-huge-14.pth``), sizes read from
the tensor shapes, keys converted. Diffusers layout: a transformers folder
(``image_encoder/``) with a ``config.json``, read as the shared text encoder's
is. Either way the network is built on the meta device and filled tensor by tensor.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import torch
from transformers import CLIPVisionConfig, CLIPVisionModel

from avatarstream.components.wan.layout import Layout
from avatarstream.components.wan.load_text_encoder import config_from_dict, read_config, read_json, read_wan_pth
from avatarstream.errors import InputError
from avatarstream.families.infinitetalk.layout import CLIP_FILE
from avatarstream.models.infinitetalk.image_encoder import (
    CLIP_MEAN,
    CLIP_STD,
    ImageEncoder,
    clip_vision_config_from_wan,
    convert_open_clip_visual_to_transformers,
    vision_model_tensors,
)
from avatarstream.weights.config_values import MAX_HEADS, MAX_LAYERS, ConfigValues, built_from
from avatarstream.weights.files import ShardedCheckpoint, StateDict
from avatarstream.weights.meta_load import MetaLoader, empty_weights
from avatarstream.weights.sandbox import inside

CLIP_NAME = "image encoder (CLIP ViT-H/14)"
#: The largest image side (and patch) a CLIP config may ask for (ViT-H/14 takes 224 x 224 in 14-pixel patches).
MAX_IMAGE_SIDE = 2048


def load_image_encoder(base: Path, layout: Layout, dtype: torch.dtype) -> ImageEncoder:
    """The CLIP vision tower from the Wan base folder ``base`` (the CLIP text tower and its tokenizer are not needed)."""
    if layout == "original":
        return ImageEncoder(_load_wan_clip(inside(base, base / CLIP_FILE), dtype))
    mean, std = _read_normalization(inside(base, base / "image_processor" / "preprocessor_config.json"))
    return ImageEncoder(_load_transformers_clip(inside(base, base / "image_encoder"), dtype), mean, std)


def _load_wan_clip(path: Path, dtype: torch.dtype) -> CLIPVisionModel:
    what = f"Wan's open-clip XLM-RoBERTa ViT-H/14 state dict ({CLIP_FILE})"
    config, tensors = read_wan_pth(path, what, clip_vision_config_from_wan, convert_open_clip_visual_to_transformers)
    return _fill_clip(config, [(path, tensors)], path, path, dtype)


def _load_transformers_clip(folder: Path, dtype: torch.dtype) -> CLIPVisionModel:
    config_path = inside(folder, folder / "config.json")
    raw = read_config(config_path, "clip_vision_model", "clip")
    if raw["model_type"] == "clip":  # a full CLIP config: its vision part
        vision = raw.get("vision_config")
        if not isinstance(vision, dict):
            raise InputError(f"{config_path} is a CLIP config without a vision_config; expected the image encoder's config")
        raw = vision
    _check_sizes(raw, config_path)
    config = config_from_dict(CLIPVisionConfig, raw, config_path)
    checkpoint = ShardedCheckpoint.open(folder, "model")
    return _fill_clip(config, checkpoint.shards(), checkpoint.source, config_path, dtype)


def _check_sizes(raw: dict[str, object], path: Path) -> None:
    """The sizes transformers would build from, each a whole number in range (a million layers would never finish; a
    huge image in tiny patches, a position table of billions)."""
    values = ConfigValues(raw, path, "expected the CLIP vision config")
    values.count("num_hidden_layers", 12, high=MAX_LAYERS)
    values.count("num_attention_heads", 12, high=MAX_HEADS)
    values.count("hidden_size", 768)
    values.count("intermediate_size", 3072)
    values.count("image_size", 224, high=MAX_IMAGE_SIDE)
    values.count("patch_size", 32, high=MAX_IMAGE_SIDE)
    values.count("num_channels", 3, high=4)


def _fill_clip(config: CLIPVisionConfig, shards: Iterable[tuple[Path, StateDict]], source: Path, described_by: Path, dtype: torch.dtype) -> CLIPVisionModel:
    """Build on meta and fill from ``CLIPVisionModelWithProjection``-named tensors (see ``vision_model_tensors``);
    ``described_by``: the file the sizes came from."""
    with built_from(described_by, "expected the CLIP vision config"), empty_weights():
        network = CLIPVisionModel(config)
    loader = MetaLoader(network, CLIP_NAME, dtype)
    for path, tensors in shards:
        loader.load(vision_model_tensors(tensors), path)
        del tensors
    return loader.finish([source])


def _read_normalization(path: Path) -> tuple[list[float], list[float]]:
    """CLIP mean and std from Diffusers' ``image_processor/preprocessor_config.json``."""
    raw = read_json(path)
    mean, std = raw.get("image_mean", list(CLIP_MEAN)), raw.get("image_std", list(CLIP_STD))  # CLIPImageProcessor defaults
    if not (_three_numbers(mean) and _three_numbers(std)):
        raise InputError(f"{path} has image_mean {mean!r} and image_std {std!r}; expected three numbers each (RGB)")
    return [float(m) for m in mean], [float(s) for s in std]


def _three_numbers(value: object) -> bool:
    return isinstance(value, list) and len(value) == 3 and all(isinstance(v, (int, float)) for v in value)
