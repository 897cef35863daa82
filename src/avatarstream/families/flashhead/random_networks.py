"""FlashHead's networks at real (or tiny) size with random weights built straight on a device, for the benchmarks.

Speed does not depend on the weights' values, so ``bench --scenario gpu`` (the
family's ``production_model``) and ``bench/gpu_all.sh``'s flashhead part build
the published sizes here instead of downloading them.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import torch
from diffusers.models.autoencoders.autoencoder_kl_ltx import AutoencoderKLLTXVideo
from transformers import Wav2Vec2Config, Wav2Vec2FeatureExtractor, Wav2Vec2Model

from avatarstream.benchtools import gpu_run
from avatarstream.components.wan.config import VAEConfig
from avatarstream.components.wan.vae import build_vae
from avatarstream.families.flashhead.networks import FlashHeadNetworks
from avatarstream.families.flashhead.tiny import LATENT, TINY_DIT, TINY_LTX, TINY_WAV2VEC2
from avatarstream.models.flashhead.config import FlashHeadConfig
from avatarstream.models.flashhead.dit import FlashHeadDiT
from avatarstream.models.flashhead.vae import LtxVideoVAE, VideoVAE, WanVideoVAE
from avatarstream.weights.meta_load import empty_weights

#: What random networks are built in on a GPU (on a CPU float32: a dry run, and bf16 is slow there).
DTYPE = torch.bfloat16
#: The published DiT sizes (``FlashHeadConfig``'s defaults are Pro's); Lite differs in its latent and patch.
REAL_DIT = {"pro": FlashHeadConfig(), "lite": dataclasses.replace(FlashHeadConfig(), in_dim=256, out_dim=128, patch_size=(1, 1, 1), vae_stride=(8, 32, 32))}


def meta_networks(variant: str, tiny: bool) -> FlashHeadNetworks:
    """The variant's networks with meta parameters (shapes only), at real or tiny size."""
    audio = Wav2Vec2Config(**TINY_WAV2VEC2) if tiny else Wav2Vec2Config()  # wav2vec2-base-960h's sizes are the defaults
    with empty_weights():
        dit = FlashHeadDiT((TINY_DIT if tiny else REAL_DIT)[variant])
        vae: VideoVAE
        if variant == "pro":
            vae = WanVideoVAE(build_vae(VAEConfig(base_dim=4, z_dim=LATENT) if tiny else VAEConfig()))
        else:
            vae = LtxVideoVAE(AutoencoderKLLTXVideo(**ltx_sizes(tiny)))
        encoder = Wav2Vec2Model(audio)
    return FlashHeadNetworks(variant, dit, vae, encoder, Wav2Vec2FeatureExtractor(do_normalize=True))


def ltx_sizes(tiny: bool) -> dict[str, Any]:
    """``AutoencoderKLLTXVideo``'s arguments: none at real size (diffusers' defaults are LTX-Video 0.9's VAE config), the tiny
    checkpoint's config with its decoder as wide and deep as its encoder, as the loader builds it."""
    if not tiny:
        return {}
    sizes = {k: v for k, v in TINY_LTX.items() if not k.startswith("_")}
    decoder = {
        "decoder_block_out_channels": "block_out_channels",
        "decoder_layers_per_block": "layers_per_block",
        "decoder_spatio_temporal_scaling": "spatio_temporal_scaling",
    }
    return sizes | {key: sizes[encoder] for key, encoder in decoder.items()}


def build_networks(variant: str, tiny: bool, device: torch.device, dtype: torch.dtype, seed: int = 0) -> FlashHeadNetworks:
    """The variant's networks with random weights on ``device``, every one in ``dtype`` as the loader leaves them."""
    networks = meta_networks(variant, tiny)
    generator = torch.Generator(device).manual_seed(seed)
    for network in (networks.dit, networks.vae, networks.audio_encoder):
        gpu_run.materialize(network, device, dtype, generator)
    return networks
