"""Load the S2V DiT shard by shard onto a meta-built network, then merge (or attach) the LiveAvatar LoRA.

Sizes come from ``config.json`` and, for the audio encoder's layer count,
from the tensor shapes; the original key names are the network's.
"""

from __future__ import annotations

from pathlib import Path

import torch

from avatarstream.components.wan.config import TEXT_LEN
from avatarstream.errors import InputError
from avatarstream.models.liveavatar.config import S2VConfig
from avatarstream.models.liveavatar.dit import FP32_PARAMETERS, S2VDiT
from avatarstream.models.liveavatar.lora import apply_lora, lora_pairs
from avatarstream.weights.config_values import MAX_HEADS, MAX_LAYERS, ConfigValues, built_from, read_json_object
from avatarstream.weights.files import ShardedCheckpoint, read_safetensors
from avatarstream.weights.meta_load import MetaLoader, empty_weights
from avatarstream.weights.sandbox import inside

AUDIO_MIX = "casual_audio_encoder.weights"
TEXT_IN = "text_embedding.0.weight"
#: LoRA scale numerator of LiveAvatar's training config (s2v_causal_sft.yaml); the file does not state it.
DEFAULT_ALPHA = 64.0
EXPECTED = "expected the Wan2.2-S2V-14B DiT config"


def read_config(base: Path, checkpoint: ShardedCheckpoint) -> S2VConfig:
    path = inside(base, base / "config.json")
    raw = read_json_object(path, "expected Wan2.2-S2V-14B's config.json")
    _check_sizes(raw, path)
    shapes = checkpoint.shapes()
    mix, text = shapes.get(AUDIO_MIX), shapes.get(TEXT_IN)
    if mix is None or len(mix) != 4 or text is None or len(text) != 2:
        raise InputError(f"{checkpoint.source} has no {AUDIO_MIX} or {TEXT_IN}: it is not a Wan2.2-S2V checkpoint")
    try:
        return S2VConfig.from_json(raw, audio_layers=mix[1], text_dim=text[1])
    except (KeyError, TypeError, ValueError) as exc:
        raise InputError(f"invalid {path}: {exc}; {EXPECTED}") from exc


def _check_sizes(raw: dict[str, object], path: Path) -> None:
    """Every size the DiT is built from, a whole number in range (no heads would divide by zero, a million layers would
    never finish building, 1e999 is no width)."""
    values = ConfigValues(raw, path, EXPECTED)
    heads = values.count("num_heads", high=MAX_HEADS)
    values.divides("dim", values.count("dim"), heads, "num_heads")
    layers = values.count("num_layers", high=MAX_LAYERS)
    values.count("ffn_dim")
    values.count("audio_dim")
    for key, default in (("in_dim", 16), ("out_dim", 16), ("cond_dim", 16), ("num_audio_token", 4), ("text_len", TEXT_LEN)):
        values.count(key, default)
    values.count("freq_dim", 256, low=2, high=1 << 16)
    values.counts("audio_inject_layers", length=range(1, layers + 1), low=0, high=layers - 1)
    values.number("eps", 1e-6, low=0.0, high=1.0)


def load_dit(base: Path, lora: Path | None, dtype: torch.dtype, *, alpha: float = DEFAULT_ALPHA, merge: bool = True) -> S2VDiT:
    """The DiT in ``dtype`` (modulation in float32); the LoRA at ``lora`` merged, or kept as separate layers."""
    checkpoint = ShardedCheckpoint.open(base, "diffusion_pytorch_model")
    config = read_config(base, checkpoint)
    with built_from(base / "config.json", EXPECTED), empty_weights():
        network = S2VDiT(config)
    loader = MetaLoader(network, "S2V DiT", dtype, keep_fp32=lambda key: any(p in key for p in FP32_PARAMETERS))
    for path, shard in checkpoint.shards():
        loader.load(shard, path)
        del shard
    network = loader.finish([checkpoint.source])
    if lora is not None:
        try:
            apply_lora(network, lora_pairs(read_safetensors(lora)), alpha, merge=merge)
        except ValueError as exc:
            raise InputError(f"{lora}: {exc}; expected LiveAvatar's liveavatar.safetensors for this Wan2.2-S2V-14B") from exc
    return network
