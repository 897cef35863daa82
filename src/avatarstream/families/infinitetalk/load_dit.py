"""Load the InfiniteTalk DiT from either download layout plus the adapter file, shard by shard.

Sizes come from the folder: ``config.json`` (original) or
``transformer/config.json`` (Diffusers), and the tensor shapes in the shard
headers for what the original config does not state (text and CLIP widths).
Original key names are mapped with diffusers' own converter, one shard at a
time, into a network built on the meta device.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
from diffusers.loaders.single_file_utils import convert_wan_transformer_to_diffusers

from avatarstream.errors import InputError
from avatarstream.families.infinitetalk.layout import Layout
from avatarstream.models.infinitetalk.config import AUDIO_WINDOW, AdapterConfig, DiTConfig
from avatarstream.models.infinitetalk.dit import FP32_PARAMETERS, InfiniteTalkDiT
from avatarstream.weights.files import ShardedCheckpoint, read_safetensors, safetensors_shapes
from avatarstream.weights.meta_load import MetaLoader, empty_weights
from avatarstream.weights.sandbox import inside


def dit_checkpoint(base: Path, layout: Layout) -> ShardedCheckpoint:
    folder = inside(base, base / "transformer") if layout == "diffusers" else base
    return ShardedCheckpoint.open(folder, "diffusion_pytorch_model")


def read_dit_config(base: Path, layout: Layout, checkpoint: ShardedCheckpoint) -> DiTConfig:
    """The DiT's sizes from the folder's config and (original layout) its tensor shapes."""
    path = inside(base, base / "transformer" / "config.json" if layout == "diffusers" else base / "config.json")
    try:
        raw = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"cannot read {path}: {exc}; expected the model's config.json") from exc
    if not isinstance(raw, dict):
        raise InputError(f"{path} holds a JSON {type(raw).__name__}, not an object; expected the model's config.json")
    try:
        if layout == "diffusers":
            return DiTConfig.from_diffusers(raw)
        shapes = checkpoint.shapes()
        text = shapes.get("text_embedding.0.weight")
        clip = shapes.get("img_emb.proj.0.weight")
        if clip is None:
            raise InputError(f"{checkpoint.source} has no image embedding (img_emb.*): it is not an image-to-video Wan checkpoint")
        return DiTConfig(
            dim=int(raw["dim"]),
            num_heads=int(raw["num_heads"]),
            num_layers=int(raw["num_layers"]),
            ffn_dim=int(raw["ffn_dim"]),
            freq_dim=int(raw.get("freq_dim", 256)),
            in_dim=int(raw["in_dim"]),
            out_dim=int(raw["out_dim"]),
            text_dim=int(raw.get("text_dim", text[1] if text else 4096)),
            text_len=int(raw.get("text_len", 512)),
            eps=float(raw.get("eps", 1e-6)),
            clip_dim=clip[0],
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise InputError(f"invalid {path}: {exc}; expected the Wan2.1-I2V DiT config") from exc


def read_adapter_config(adapter: Path, blocks: int, channels: int) -> AdapterConfig:
    """Adapter sizes from its tensor shapes; ``blocks`` x ``channels`` is what the audio encoder gives."""
    shapes = safetensors_shapes(adapter)
    try:
        intermediate, first_inputs = shapes["audio_proj.proj1.weight"]
        (output_dim,) = shapes["audio_proj.norm.weight"]
        tokens_out = shapes["audio_proj.proj3.weight"][0]
    except (KeyError, ValueError) as exc:
        raise InputError(f"{adapter} has no audio projection (audio_proj.*): expected InfiniteTalk's infinitetalk.safetensors") from exc
    if first_inputs != AUDIO_WINDOW * blocks * channels:
        raise InputError(
            f"{adapter} expects {first_inputs // AUDIO_WINDOW} audio features per frame, but the audio encoder gives "
            f"{blocks} layers x {channels} = {blocks * channels}; use the chinese-wav2vec2-base the adapter was trained with"
        )
    return AdapterConfig(blocks, channels, intermediate, output_dim, tokens_out // output_dim)


def load_dit(base: Path, layout: Layout, adapter: Path, adapter_config: AdapterConfig, dtype: torch.dtype) -> InfiniteTalkDiT:
    """Build on the meta device, then fill from the base shards and the adapter file."""
    checkpoint = dit_checkpoint(base, layout)
    config = read_dit_config(base, layout, checkpoint)
    with empty_weights():
        network = InfiniteTalkDiT(config, adapter_config)
    loader = MetaLoader(network, "InfiniteTalk DiT", dtype, keep_fp32=lambda key: any(p in key for p in FP32_PARAMETERS))
    for path, shard in checkpoint.shards():
        if layout == "original":
            shard = convert_wan_transformer_to_diffusers(shard)
        loader.load(shard, path)
        del shard
    loader.load(read_safetensors(adapter), adapter)
    return loader.finish([checkpoint.source, adapter])
