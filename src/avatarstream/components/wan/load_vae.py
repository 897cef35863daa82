"""Load the Wan 2.1 VAE: ``Wan2.1_VAE.pth`` (original, read weights-only) or ``vae/`` (Diffusers).

The original file states no sizes; its base width and latent channels are
read from the tensor shapes (the rest of the Wan 2.1 VAE is fixed).
"""

from __future__ import annotations

from pathlib import Path

import torch
from diffusers.loaders.single_file_utils import convert_wan_vae_to_diffusers
from diffusers.models.autoencoders.autoencoder_kl_wan import AutoencoderKLWan

from avatarstream.components.wan.config import VAEConfig
from avatarstream.components.wan.layout import VAE_FILE, Layout
from avatarstream.components.wan.vae import build_vae
from avatarstream.errors import InputError
from avatarstream.weights.config_values import ConfigValues, read_json_object
from avatarstream.weights.files import ShardedCheckpoint, StateDict, read_pth
from avatarstream.weights.memory_check import meta_bytes, require_fits
from avatarstream.weights.meta_load import MetaLoader, empty_weights
from avatarstream.weights.sandbox import inside

#: The widest base and latent width a Wan VAE config may ask for (the real one is 96 wide with 16 latent channels).
MAX_VAE_WIDTH = 4096


def original_vae_config(state: StateDict, path: Path) -> VAEConfig:
    """Base width and latent channels of an original-layout VAE state dict (a scalar there is a damaged file)."""
    try:
        base_dim, z_dim = state["encoder.conv1.weight"].shape[0], state["conv2.weight"].shape[0]
    except KeyError as exc:
        raise InputError(f"{path} has no {exc.args[0]}: it is not a Wan 2.1 VAE checkpoint") from exc
    except IndexError as exc:
        raise InputError(f"{path} holds a scalar where the Wan 2.1 VAE has a convolution weight; the file is damaged or of another model") from exc
    if not (1 <= base_dim <= MAX_VAE_WIDTH and 1 <= z_dim <= MAX_VAE_WIDTH):
        raise InputError(
            f"{path} holds a VAE {base_dim} wide with {z_dim} latent channels, expected 1..{MAX_VAE_WIDTH} each; the file is damaged or of another model"
        )
    return VAEConfig(base_dim=base_dim, z_dim=z_dim)


def diffusers_vae_config(path: Path) -> VAEConfig:
    """The Diffusers ``vae/config.json``, every value checked for type and range."""
    expected = "expected the AutoencoderKLWan config.json"
    values = ConfigValues(read_json_object(path, expected), path, expected)
    z_dim = values.count("z_dim", high=MAX_VAE_WIDTH)
    dim_mult = values.counts("dim_mult", (1, 2, 4, 4), length=range(1, 9), high=64)
    return VAEConfig(
        base_dim=values.count("base_dim", high=MAX_VAE_WIDTH),
        z_dim=z_dim,
        dim_mult=dim_mult,
        num_res_blocks=values.count("num_res_blocks", 2, high=64),
        temperal_downsample=values.flags("temperal_downsample", (False, True, True), length=len(dim_mult) - 1),
        latents_mean=values.numbers("latents_mean", length=z_dim, low=-1e6, high=1e6),
        latents_std=values.numbers("latents_std", length=z_dim, low=1e-12, high=1e6),
    )


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
    require_fits(meta_bytes(lambda: build_vae(config), torch.finfo(dtype).bits // 8), "a VAE", sources[0])
    with empty_weights():
        network = build_vae(config)
    loader = MetaLoader(network, "Wan VAE", dtype)
    for path, tensors in shards:
        loader.load(tensors, path)
    return loader.finish(sources)
