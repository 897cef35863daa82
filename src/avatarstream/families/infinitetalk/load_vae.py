"""Load the Wan 2.1 VAE: ``Wan2.1_VAE.pth`` (original, read weights-only) or ``vae/`` (Diffusers).

The original file states no sizes; its base width and latent channels are
read from the tensor shapes (the rest of the Wan 2.1 VAE is fixed).
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
from diffusers.loaders.single_file_utils import convert_wan_vae_to_diffusers
from diffusers.models.autoencoders.autoencoder_kl_wan import AutoencoderKLWan

from avatarstream.errors import InputError
from avatarstream.families.infinitetalk.layout import VAE_FILE, Layout
from avatarstream.models.infinitetalk.config import VAEConfig
from avatarstream.models.infinitetalk.vae import build_vae
from avatarstream.weights.files import ShardedCheckpoint, StateDict, read_pth
from avatarstream.weights.meta_load import MetaLoader, empty_weights
from avatarstream.weights.sandbox import inside


def original_vae_config(state: StateDict, path: Path) -> VAEConfig:
    """Base width and latent channels of an original-layout VAE state dict."""
    try:
        base_dim = state["encoder.conv1.weight"].shape[0]
        z_dim = state["conv2.weight"].shape[0]
    except KeyError as exc:
        raise InputError(f"{path} has no {exc.args[0]}: it is not a Wan 2.1 VAE checkpoint") from exc
    return VAEConfig(base_dim=base_dim, z_dim=z_dim)


def diffusers_vae_config(path: Path) -> VAEConfig:
    try:
        raw = json.loads(path.read_text())
        return VAEConfig(
            base_dim=int(raw["base_dim"]),
            z_dim=int(raw["z_dim"]),
            dim_mult=tuple(raw.get("dim_mult", (1, 2, 4, 4))),
            num_res_blocks=int(raw.get("num_res_blocks", 2)),
            temperal_downsample=tuple(raw.get("temperal_downsample", (False, True, True))),
            latents_mean=tuple(raw["latents_mean"]),
            latents_std=tuple(raw["latents_std"]),
        )
    except (OSError, json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
        raise InputError(f"cannot read {path}: {exc}; expected the AutoencoderKLWan config.json") from exc


def load_vae(base: Path, layout: Layout, dtype: torch.dtype) -> AutoencoderKLWan:
    if layout == "original":
        path = inside(base, base / VAE_FILE)
        state = read_pth(path)
        config, sources = original_vae_config(state, path), [path]
        shards = iter([(path, convert_wan_vae_to_diffusers(dict(state)))])
    else:
        folder = inside(base, base / "vae")
        config = diffusers_vae_config(inside(folder, folder / "config.json"))
        checkpoint = ShardedCheckpoint.open(folder, "diffusion_pytorch_model")
        sources, shards = [checkpoint.source], checkpoint.shards()
    with empty_weights():
        network = build_vae(config)
    loader = MetaLoader(network, "Wan VAE", dtype)
    for path, tensors in shards:
        loader.load(tensors, path)
    return loader.finish(sources)
