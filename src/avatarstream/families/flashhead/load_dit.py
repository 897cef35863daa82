"""Load a FlashHead DiT (``Model_Pro/`` or ``Model_Lite/``): its config.json checked, then its one safetensors file onto a meta-built network.

The real config.json lacks the audio adapter's sizes; ``FlashHeadConfig.from_json``
defaults them to the reference's hard-coded values.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from avatarstream.errors import InputError
from avatarstream.families.flashhead.layout import WEIGHTS_STEM
from avatarstream.models.flashhead.config import ADAPTER_DEFAULTS, FlashHeadConfig
from avatarstream.models.flashhead.dit import FlashHeadDiT
from avatarstream.weights.config_values import MAX_HEADS, MAX_LAYERS, ConfigValues, built_from, read_json_object
from avatarstream.weights.files import ShardedCheckpoint
from avatarstream.weights.memory_check import meta_bytes, require_fits
from avatarstream.weights.meta_load import MetaLoader, empty_weights
from avatarstream.weights.sandbox import inside

EXPECTED = "expected a SoulX-FlashHead DiT config (WanModelAudioProject)"


def read_config(folder: Path) -> FlashHeadConfig:
    """The variant's ``config.json``, every size a whole number in range before anything is built."""
    path = inside(folder, folder / "config.json")
    raw = read_json_object(path, EXPECTED)
    _check_sizes(raw, path)
    try:
        return FlashHeadConfig.from_json(raw)
    except (KeyError, TypeError, ValueError) as exc:
        raise InputError(f"invalid {path}: {exc}; {EXPECTED}") from exc


def _check_sizes(raw: dict[str, Any], path: Path) -> None:
    values = ConfigValues(raw, path, EXPECTED)
    heads = values.count("num_heads", high=MAX_HEADS)
    values.divides("dim", values.count("dim"), heads, "num_heads")
    values.count("num_layers", high=MAX_LAYERS)
    for key in ("in_dim", "out_dim", "ffn_dim"):
        values.count(key)
    values.count("freq_dim", low=2, high=1 << 16)
    values.count("text_dim", 4096)
    values.count("audio_output_dim", raw.get("dim"))
    for key, default in ADAPTER_DEFAULTS.items():
        values.count(key, default)
    values.counts("patch_size", length=range(3, 4), high=64)
    values.counts("vae_stride", length=range(3, 4), high=256)
    values.number("eps", 1e-6, low=0.0, high=1.0)


def load_dit(folder: Path, dtype: torch.dtype) -> FlashHeadDiT:
    """The DiT of ``folder`` in ``dtype``."""
    config = read_config(folder)
    checkpoint = ShardedCheckpoint.open(folder, WEIGHTS_STEM)
    with built_from(folder / "config.json", EXPECTED):
        require_fits(meta_bytes(lambda: FlashHeadDiT(config), torch.finfo(dtype).bits // 8), "a FlashHead DiT", folder / "config.json")
        with empty_weights():
            network = FlashHeadDiT(config)
    loader = MetaLoader(network, "FlashHead DiT", dtype)
    for path, shard in checkpoint.shards():
        loader.load(shard, path)
        del shard
    return loader.finish([checkpoint.source])
