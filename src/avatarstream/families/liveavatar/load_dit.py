"""Load the S2V DiT shard by shard onto a meta-built network, then merge (or attach) the LiveAvatar LoRA.

Sizes come from ``config.json`` and, for the audio encoder's layer count,
from the tensor shapes; the original key names are the network's.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch

from avatarstream.errors import InputError
from avatarstream.models.liveavatar.config import S2VConfig
from avatarstream.models.liveavatar.dit import FP32_PARAMETERS, S2VDiT
from avatarstream.models.liveavatar.lora import apply_lora, lora_pairs
from avatarstream.weights.files import ShardedCheckpoint, read_safetensors
from avatarstream.weights.meta_load import MetaLoader, empty_weights
from avatarstream.weights.sandbox import inside

AUDIO_MIX = "casual_audio_encoder.weights"
TEXT_IN = "text_embedding.0.weight"
#: LoRA scale numerator of LiveAvatar's training config (s2v_causal_sft.yaml); the file does not state it.
DEFAULT_ALPHA = 64.0


def read_config(base: Path, checkpoint: ShardedCheckpoint) -> S2VConfig:
    path = inside(base, base / "config.json")
    try:
        raw = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise InputError(f"cannot read {path}: {exc}; expected Wan2.2-S2V-14B's config.json") from exc
    if not isinstance(raw, dict):
        raise InputError(f"{path} holds a JSON {type(raw).__name__}, not an object; expected Wan2.2-S2V-14B's config.json")
    shapes = checkpoint.shapes()
    mix, text = shapes.get(AUDIO_MIX), shapes.get(TEXT_IN)
    if mix is None or len(mix) != 4 or text is None or len(text) != 2:
        raise InputError(f"{checkpoint.source} has no {AUDIO_MIX} or {TEXT_IN}: it is not a Wan2.2-S2V checkpoint")
    try:
        return S2VConfig.from_json(raw, audio_layers=mix[1], text_dim=text[1])
    except (KeyError, TypeError, ValueError) as exc:
        raise InputError(f"invalid {path}: {exc}; expected the Wan2.2-S2V-14B DiT config") from exc


def load_dit(base: Path, lora: Path | None, dtype: torch.dtype, *, alpha: float = DEFAULT_ALPHA, merge: bool = True) -> S2VDiT:
    """The DiT in ``dtype`` (modulation in float32); the LoRA at ``lora`` merged, or kept as separate layers."""
    checkpoint = ShardedCheckpoint.open(base, "diffusion_pytorch_model")
    config = read_config(base, checkpoint)
    with empty_weights():
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
