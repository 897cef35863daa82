"""A random tiny FlashVSR checkpoint in the download layout: every file ``resolve`` looks for, both decoders, a config.json.

Tests and users run the upscaler on a CPU in seconds with it (the frames are
noise). The DiT's safetensors metadata marks the weights as random.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import torch
from safetensors.torch import save_file

from avatarstream.components.wan.config import VAEConfig
from avatarstream.components.wan.layout import RANDOM_MARK
from avatarstream.components.wan.tiny import contiguous, seeded, write_vae
from avatarstream.families.flashvsr.layout import CONFIG_FILE, DIT_FILE, LQ_PROJ_FILE, PROMPT_FILE, TCDECODER_FILE
from avatarstream.models.flashvsr.config import DiTConfig, LQProjConfig, TCDecoderConfig
from avatarstream.models.flashvsr.dit import FlashVSRDiT
from avatarstream.models.flashvsr.lq_proj import LQProjection
from avatarstream.models.flashvsr.tcdecoder import TCDecoder

TINY_DIT = DiTConfig(dim=64, num_heads=2, num_layers=2, ffn_dim=128, text_dim=32)
TINY_LQ_PROJ = LQProjConfig(hidden_dim1=4, hidden_dim2=16, out_dim=TINY_DIT.dim)
TINY_TCDECODER = TCDecoderConfig(channels=(12, 8, 8, 4))
TINY_TEXT_LEN = 16


def write_tiny_checkpoint(out: Path, *, seed: int = 0) -> Path:
    """The folder ``out`` with a random checkpoint the loaders accept in both modes; returns ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    dit = seeded(seed, lambda: FlashVSRDiT(TINY_DIT))
    with torch.no_grad():
        for name, parameter in dit.named_parameters():
            if name.endswith("modulation"):  # zero-initialised in the network: random here so that every branch shows
                parameter.uniform_(-1.0, 1.0, generator=torch.Generator().manual_seed(seed))
    save_file(contiguous(dit.state_dict()), str(out / DIT_FILE), metadata={RANDOM_MARK: f"a tiny FlashVSR checkpoint (seed {seed})"})
    config = {**asdict(TINY_DIT), "patch_size": list(TINY_DIT.patch_size)}
    (out / CONFIG_FILE).write_text(json.dumps(config, indent=2))
    torch.save(contiguous(seeded(seed + 1, lambda: LQProjection(TINY_LQ_PROJ)).state_dict()), out / LQ_PROJ_FILE)
    torch.save(contiguous(seeded(seed + 2, lambda: TCDecoder(TINY_TCDECODER)).state_dict()), out / TCDECODER_FILE)
    write_vae(out, "original", VAEConfig(base_dim=4), seed + 3)
    prompt = seeded(seed + 4, lambda: torch.randn(1, TINY_TEXT_LEN, TINY_DIT.text_dim))
    torch.save(prompt, out / PROMPT_FILE)
    return out
