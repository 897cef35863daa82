"""Load the InfiniteTalk DiT from either download layout plus the adapter file, shard by shard.

Sizes come from the folder: ``config.json`` (original) or
``transformer/config.json`` (Diffusers), and the tensor shapes in the shard
headers for what the original config does not state (text and CLIP widths).
Original key names are mapped with diffusers' own converter, one shard at a
time, into a network built on the meta device.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Protocol

import torch
from diffusers.loaders.single_file_utils import convert_wan_transformer_to_diffusers

from avatarstream.components.wan.config import TEXT_LEN
from avatarstream.components.wan.layout import Layout
from avatarstream.errors import InputError
from avatarstream.models.infinitetalk.config import AUDIO_WINDOW, AdapterConfig, DiTConfig
from avatarstream.models.infinitetalk.dit import FP32_PARAMETERS, InfiniteTalkDiT
from avatarstream.weights.config_values import MAX_HEADS, MAX_LAYERS, MAX_WIDTH, ConfigValues, read_json_object
from avatarstream.weights.files import ShardedCheckpoint, read_safetensors, safetensors_shapes
from avatarstream.weights.memory_check import meta_bytes, require_fits
from avatarstream.weights.meta_load import MetaLoader, empty_weights
from avatarstream.weights.sandbox import inside

#: The narrowest attention head Wan's 3D rotary table can split into its time, height and width parts (each of an even
#: width, so the head's width must be even too).
MIN_HEAD_DIM = 6


def dit_checkpoint(base: Path, layout: Layout) -> ShardedCheckpoint:
    folder = inside(base, base / "transformer") if layout == "diffusers" else base
    return ShardedCheckpoint.open(folder, "diffusion_pytorch_model")


def dit_config_path(base: Path, layout: Layout) -> Path:
    return inside(base, base / "transformer" / "config.json" if layout == "diffusers" else base / "config.json")


class TensorShapes(Protocol):
    """Where the original layout's config finds the sizes it does not state: a checkpoint's tensor shapes."""

    @property
    def source(self) -> Path: ...

    def shapes(self) -> dict[str, tuple[int, ...]]: ...


def read_dit_config(base: Path, layout: Layout, checkpoint: TensorShapes) -> DiTConfig:
    """The DiT's sizes from the folder's config and (original layout) its tensor shapes, each checked for type and range."""
    path = dit_config_path(base, layout)
    expected = "expected the Wan2.1-I2V DiT config"
    values = ConfigValues(read_json_object(path, expected), path, expected)
    if layout == "diffusers":
        heads = values.count("num_attention_heads", high=MAX_HEADS)
        head_dim = values.count("attention_head_dim", low=MIN_HEAD_DIM)
        dim, in_key, out_key = heads * head_dim, "in_channels", "out_channels"
        if dim > MAX_WIDTH:
            raise InputError(f"invalid {path}: num_attention_heads x attention_head_dim is {dim}, expected at most {MAX_WIDTH}; {expected}")
        if head_dim % 2:
            raise InputError(f"invalid {path}: attention_head_dim is {head_dim}, expected an even number (the 3D rotary table); {expected}")
        text_dim = values.count("text_dim", 4096)
        clip_dim = values.count("image_dim", 1280) if values.raw.get("image_dim") is not None else 1280
        patch = values.counts("patch_size", (1, 2, 2), length=range(3, 4), high=64)
    else:
        heads, dim, in_key, out_key = values.count("num_heads", high=MAX_HEADS), values.count("dim"), "in_dim", "out_dim"
        values.divides("dim", dim, heads, "num_heads")
        if dim // heads < MIN_HEAD_DIM or (dim // heads) % 2:
            raise InputError(
                f"invalid {path}: dim / num_heads is {dim // heads}, expected an even number of at least {MIN_HEAD_DIM} (the 3D rotary table); {expected}"
            )
        shapes = checkpoint.shapes()
        clip = shapes.get("img_emb.proj.0.weight")
        if clip is None:
            raise InputError(f"{checkpoint.source} has no image embedding (img_emb.*): it is not an image-to-video Wan checkpoint")
        text = shapes.get("text_embedding.0.weight")
        clip_dim = _width(clip, 1, 0, "img_emb.proj.0.weight", checkpoint.source)
        text_dim = values.count("text_dim", _width(text, 2, 1, "text_embedding.0.weight", checkpoint.source) if text else 4096)
        values.count("text_len", TEXT_LEN, low=TEXT_LEN, high=TEXT_LEN)
        patch = (1, 2, 2)
    return DiTConfig(
        dim=dim,
        num_heads=heads,
        num_layers=values.count("num_layers", high=MAX_LAYERS),
        ffn_dim=values.count("ffn_dim"),
        freq_dim=values.count("freq_dim", 256, low=2, high=1 << 16),
        in_dim=values.count(in_key),
        out_dim=values.count(out_key),
        text_dim=text_dim,
        eps=values.number("eps", 1e-6, low=0.0, high=1.0),
        clip_dim=clip_dim,
        patch_size=patch,  # type: ignore[arg-type]  # three counts, checked above
    )


def _width(shape: tuple[int, ...], rank: int, axis: int, key: str, source: Path) -> int:
    """One axis of a weight's shape from a shard header; a scalar where a vector or a matrix belongs is a damaged file."""
    if len(shape) != rank or not 1 <= shape[axis] <= MAX_WIDTH:
        kind = "vector" if rank == 1 else "matrix"
        raise InputError(f"{source} holds {key} with shape {shape}, expected a {kind} of at most {MAX_WIDTH} per side; the file is damaged or of another model")
    return shape[axis]


def read_adapter_config(adapter: Path, blocks: int, channels: int, shapes: Mapping[str, tuple[int, ...]] | None = None) -> AdapterConfig:
    """Adapter sizes from its tensor shapes (``shapes``: of a file holding the whole DiT); ``blocks`` x ``channels`` is
    what the audio encoder gives."""
    shapes = safetensors_shapes(adapter) if shapes is None else shapes
    try:
        intermediate, first_inputs = shapes["audio_proj.proj1.weight"]
        (output_dim,) = shapes["audio_proj.norm.weight"]
        tokens_out, _ = shapes["audio_proj.proj3.weight"]
    except (KeyError, ValueError) as exc:
        raise InputError(f"{adapter} has no audio projection (audio_proj.*) of the expected shapes: expected InfiniteTalk's infinitetalk.safetensors") from exc
    if min(intermediate, output_dim, tokens_out) < 1 or max(intermediate, output_dim, first_inputs) > MAX_WIDTH or tokens_out % output_dim:
        raise InputError(
            f"{adapter} holds an audio projection of impossible sizes (proj1 {intermediate}x{first_inputs}, norm {output_dim}, proj3 {tokens_out} rows); "
            "the file is damaged or of another model"
        )
    if first_inputs != AUDIO_WINDOW * blocks * channels:
        raise InputError(
            f"{adapter} expects {first_inputs // AUDIO_WINDOW} audio features per frame, but the audio encoder gives "
            f"{blocks} layers x {channels} = {blocks * channels}; use the chinese-wav2vec2-base the adapter was trained with"
        )
    return AdapterConfig(blocks, channels, intermediate, output_dim, tokens_out // output_dim)


def dit_bytes(config: DiTConfig, adapter: AdapterConfig, dtype: torch.dtype) -> int:
    """Bytes of the DiT's weights at ``dtype`` and its buffers: the network outside its blocks plus ``num_layers`` blocks,
    counted from a zero- and a one-block build on the meta device (a thousand blocks would take a while even there)."""
    size = torch.finfo(dtype).bits // 8
    outside = meta_bytes(lambda: InfiniteTalkDiT(replace(config, num_layers=0), adapter), size)
    one = meta_bytes(lambda: InfiniteTalkDiT(replace(config, num_layers=1), adapter), size)
    return outside + (one - outside) * config.num_layers


def load_dit(base: Path, layout: Layout, adapter: Path, adapter_config: AdapterConfig, dtype: torch.dtype) -> InfiniteTalkDiT:
    """Build on the meta device, then fill from the base shards and the adapter file."""
    checkpoint = dit_checkpoint(base, layout)
    config = read_dit_config(base, layout, checkpoint)
    require_fits(dit_bytes(config, adapter_config, dtype), "a DiT", dit_config_path(base, layout))
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
