"""A random tiny FlashHead checkpoint laid out exactly as the downloads are: ``SoulX-FlashHead-1_3B/`` and ``wav2vec2-base-960h/``.

One variant per call (``pro``: ``Model_Pro/`` + ``VAE_Wan/``; ``lite``:
``Model_Lite/`` + ``VAE_LTX/``), beside a tiny wav2vec2 (weight norm stored as
``weight_g``/``weight_v``, as Hugging Face ships it; the golden set's file has
the other layout). The DiT file's metadata marks the weights as random, so
every run warns about it. Tests and users render and serve the family on a
CPU with it (the video is noise).
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import torch
from diffusers.models.autoencoders.autoencoder_kl_ltx import AutoencoderKLLTXVideo
from safetensors.torch import save_file
from transformers import Wav2Vec2Config, Wav2Vec2ForCTC

from avatarstream.components.wan.config import VAEConfig
from avatarstream.components.wan.layout import RANDOM_MARK
from avatarstream.components.wan.tiny import contiguous, save_wav2vec2, seeded, write_vae
from avatarstream.families.flashhead.layout import AUDIO_ENCODER_DIR, BASE_DIR, MODEL_DIRS, VAE_DIRS, WEIGHTS_STEM
from avatarstream.models.flashhead.config import FlashHeadConfig
from avatarstream.models.flashhead.dit import FlashHeadDiT

LATENT = 16
WAV2VEC2_WIDTH, WAV2VEC2_LAYERS = 16, 2
TINY_PRO = FlashHeadConfig(
    dim=48, num_heads=2, num_layers=2, ffn_dim=64, freq_dim=16, text_dim=16, in_dim=2 * LATENT, out_dim=LATENT, audio_intermediate_dim=24,
    audio_output_dim=48, audio_context_tokens=4, audio_blocks=WAV2VEC2_LAYERS, audio_channels=WAV2VEC2_WIDTH, audio_emb_in_dim=WAV2VEC2_WIDTH,
)  # fmt: skip
TINY_DIT = {"pro": TINY_PRO, "lite": dataclasses.replace(TINY_PRO, vae_stride=(8, 32, 32), patch_size=(1, 1, 1))}
#: LTX-Video 0.9's VAE config keys (diffusers 0.32 format), at tiny widths and depths.
TINY_LTX: dict[str, Any] = {
    "_class_name": "AutoencoderKLLTXVideo", "_diffusers_version": "0.32.0.dev0", "block_out_channels": [4, 8, 16, 16], "decoder_causal": False,
    "encoder_causal": True, "in_channels": 3, "latent_channels": LATENT, "layers_per_block": [1, 1, 1, 1, 1], "out_channels": 3, "patch_size": 4,
    "patch_size_t": 1, "resnet_norm_eps": 1e-06, "scaling_factor": 1.0, "spatio_temporal_scaling": [True, True, True, False],
}  # fmt: skip
TINY_WAV2VEC2: dict[str, Any] = {
    "hidden_size": WAV2VEC2_WIDTH, "num_hidden_layers": WAV2VEC2_LAYERS, "num_attention_heads": 2, "intermediate_size": 32, "conv_dim": [16] * 7,
    "num_conv_pos_embeddings": 16, "num_conv_pos_embedding_groups": 4, "feat_extract_norm": "group", "do_stable_layer_norm": False,
    "conv_bias": False, "vocab_size": 32, "architectures": ["Wav2Vec2ForCTC"],
}  # fmt: skip
#: wav2vec2-base-960h's processor settings (zero mean, unit variance).
PREPROCESSOR = {
    "do_normalize": True, "feature_extractor_type": "Wav2Vec2FeatureExtractor", "feature_size": 1, "padding_side": "right",
    "padding_value": 0.0, "return_attention_mask": False, "sampling_rate": 16000,
}  # fmt: skip


def write_dit(folder: Path, config: FlashHeadConfig, seed: int) -> None:
    dit = seeded(seed, lambda: FlashHeadDiT(config))
    folder.mkdir(parents=True, exist_ok=True)
    mark = {RANDOM_MARK: f"a tiny checkpoint written by scripts/make_tiny_checkpoint.py (seed {seed})"}
    save_file(contiguous(dit.state_dict()), str(folder / f"{WEIGHTS_STEM}.safetensors"), metadata={"format": "pt", **mark})
    (folder / "config.json").write_text(json.dumps(config.to_json(), indent=2))


def write_ltx_vae(folder: Path, seed: int) -> None:
    """The LTX VAE with random latent statistics (in its weights file, as LTX-Video's), its config.json in LTX-Video 0.9's keys."""
    kwargs = {k: v for k, v in TINY_LTX.items() if not k.startswith("_")}
    kwargs |= {"decoder_block_out_channels": kwargs["block_out_channels"], "decoder_layers_per_block": kwargs["layers_per_block"]}

    def build() -> AutoencoderKLLTXVideo:
        vae = AutoencoderKLLTXVideo(**kwargs)
        vae.latents_mean.copy_(0.3 * torch.randn(LATENT))
        vae.latents_std.copy_(0.5 + torch.rand(LATENT))
        return vae

    folder.mkdir(parents=True, exist_ok=True)
    save_file(contiguous(seeded(seed, build).state_dict()), str(folder / f"{WEIGHTS_STEM}.safetensors"))
    (folder / "config.json").write_text(json.dumps(TINY_LTX, indent=2))


def write_tiny_checkpoint(out: Path, *, seed: int = 0, variant: str = "pro") -> Path:
    """The ``variant``'s folders and wav2vec2 under ``out`` with their download names; returns ``out`` (what ``--weights`` names)."""
    if variant not in MODEL_DIRS:
        raise ValueError(f"variant must be one of {', '.join(MODEL_DIRS)}, got {variant!r}")
    base = out / BASE_DIR
    write_dit(base / MODEL_DIRS[variant], TINY_DIT[variant], seed)
    vae = base / VAE_DIRS[variant]
    if variant == "pro":
        vae.mkdir(parents=True, exist_ok=True)
        write_vae(vae, "original", VAEConfig(base_dim=4, z_dim=LATENT), seed + 1)
    else:
        write_ltx_vae(vae, seed + 1)
    save_wav2vec2(out / AUDIO_ENCODER_DIR, seeded(seed + 2, lambda: Wav2Vec2ForCTC(Wav2Vec2Config(**TINY_WAV2VEC2))), PREPROCESSOR)
    return out
