"""A random tiny LiveAvatar checkpoint laid out exactly as the downloads are: ``Wan2.2-S2V-14B/`` and ``LiveAvatar/``.

Tests and users render and serve the whole family on a CPU in seconds with it
(the video is noise). The LoRA file's metadata marks the weights as random, so
every run warns about it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import save_file
from transformers import Wav2Vec2Config, Wav2Vec2ForCTC

from avatarstream.components.wan.config import VAEConfig
from avatarstream.components.wan.layout import RANDOM_MARK
from avatarstream.components.wan.tiny import contiguous, save_wav2vec2, seeded, write_sharded, write_vae
from avatarstream.components.wan.tiny_text_encoder import write_tiny_text_encoder
from avatarstream.families.liveavatar.layout import AUDIO_ENCODER_DIR, BASE_DIR, LORA_FILE, WeightsLayout
from avatarstream.models.liveavatar.config import S2VConfig
from avatarstream.models.liveavatar.dit import S2VDiT

TINY = S2VConfig(dim=32, num_heads=2, num_layers=2, ffn_dim=64, audio_dim=16, audio_layers=3, audio_inject_layers=(0, 1), text_dim=32)
TINY_LORA_RANK = 4
LORA_TARGETS = ("q", "k", "v", "o", "ffn.0", "ffn.2")
TINY_WAV2VEC2: dict[str, Any] = {
    "hidden_size": 16, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 32,
    "conv_dim": [16] * 7, "num_conv_pos_embeddings": 16, "num_conv_pos_embedding_groups": 4,
    "feat_extract_norm": "layer", "do_stable_layer_norm": True, "conv_bias": True, "vocab_size": 33,
    "architectures": ["Wav2Vec2ForCTC"],
}  # fmt: skip
#: wav2vec2-large-xlsr-53-english's processor settings (zero mean, unit variance).
PREPROCESSOR = {"do_normalize": True, "feature_size": 1, "padding_side": "right", "padding_value": 0.0, "return_attention_mask": True, "sampling_rate": 16000}


def write_lora(path: Path, dit: S2VDiT, seed: int) -> None:
    """Random rank-4 A/B pairs for every targeted linear layer, under PEFT's names."""
    generator = torch.Generator().manual_seed(seed)
    state = {}
    for name, module in dit.named_modules():
        if isinstance(module, torch.nn.Linear) and name.endswith(tuple(f".{t}" for t in LORA_TARGETS)):
            state[f"{name}.lora_A.default.weight"] = torch.randn(TINY_LORA_RANK, module.in_features, generator=generator) * 0.02
            state[f"{name}.lora_B.default.weight"] = torch.randn(module.out_features, TINY_LORA_RANK, generator=generator) * 0.02
    path.parent.mkdir(parents=True, exist_ok=True)
    save_file(
        {k: v.to(torch.bfloat16) for k, v in state.items()},
        str(path),
        metadata={RANDOM_MARK: f"a tiny checkpoint written by scripts/make_tiny_checkpoint.py (seed {seed})"},
    )


def write_wav2vec2(folder: Path, config: S2VConfig, seed: int) -> None:
    """A CTC checkpoint as wav2vec2-large-xlsr-53-english ships it, with as many hidden states as the DiT mixes."""
    raw = dict(TINY_WAV2VEC2, hidden_size=config.audio_dim, num_hidden_layers=config.audio_layers - 1)
    save_wav2vec2(folder, seeded(seed, lambda: Wav2Vec2ForCTC(Wav2Vec2Config(**raw))), PREPROCESSOR)


def write_tiny_checkpoint(out: Path, *, seed: int = 0, shards: int = 2, config: S2VConfig = TINY) -> WeightsLayout:
    """Every folder of a random checkpoint under ``out`` with its download name (umT5 and its tokenizer included)."""
    base = out / BASE_DIR
    base.mkdir(parents=True, exist_ok=True)
    dit = seeded(seed, lambda: S2VDiT(config))
    write_sharded(base, "diffusion_pytorch_model", {k: v.to(torch.bfloat16) for k, v in contiguous(dit.state_dict()).items()}, shards)
    (base / "config.json").write_text(json.dumps(config.to_original(), indent=2))
    write_lora(out / LORA_FILE, dit, seed + 1)
    write_vae(base, "original", VAEConfig(base_dim=4), seed + 2)
    write_tiny_text_encoder(base, "original", config.text_dim, seed + 3)
    write_wav2vec2(base / AUDIO_ENCODER_DIR, config, seed + 4)
    return WeightsLayout(base, out / LORA_FILE, base / AUDIO_ENCODER_DIR)
