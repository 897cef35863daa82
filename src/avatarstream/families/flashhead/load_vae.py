"""Load the variant's VAE: ``VAE_Wan/Wan2.1_VAE.pth`` (Pro, through the shared Wan loader) or ``VAE_LTX/`` (Lite, diffusers' format).

The reference reads the LTX folder only if its config.json is LTX-Video 0.9's;
here its sizes are read and checked, the decoder built with the encoder's
widths and depths (diffusers >= 0.33 names them apart; LTX-Video 0.9 has them
equal), and its latent statistics come from the weights file's ``latents_mean`` /
``latents_std``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from diffusers.models.autoencoders.autoencoder_kl_ltx import AutoencoderKLLTXVideo

from avatarstream.components.wan.load_vae import MAX_VAE_WIDTH, load_vae
from avatarstream.errors import InputError
from avatarstream.families.flashhead.layout import WEIGHTS_STEM
from avatarstream.models.flashhead.vae import LtxVideoVAE, VideoVAE, WanVideoVAE
from avatarstream.weights.config_values import ConfigValues, built_from, read_json_object
from avatarstream.weights.files import ShardedCheckpoint
from avatarstream.weights.memory_check import meta_bytes, require_fits
from avatarstream.weights.meta_load import MetaLoader, empty_weights
from avatarstream.weights.sandbox import inside

#: The latent statistics LTX-Video keeps in its weights file (buffers of the diffusers model).
STATISTICS = {"latents_mean", "latents_std"}
EXPECTED = "expected LTX-Video 0.9's VAE config (AutoencoderKLLTXVideo, diffusers format)"


def ltx_kwargs(path: Path) -> dict[str, Any]:
    """``AutoencoderKLLTXVideo``'s arguments from ``config.json``, each checked for type and range."""
    raw = read_json_object(path, EXPECTED)
    values = ConfigValues(raw, path, EXPECTED)
    if raw.get("timestep_conditioning", False) is not False:
        raise InputError(f"{path} asks for timestep conditioning (LTX-Video 0.9.1 or later); FlashHead Lite uses the LTX-Video 0.9 VAE")
    widths = values.counts("block_out_channels", (128, 256, 512, 512), length=range(1, 9), high=MAX_VAE_WIDTH)
    layers = values.counts("layers_per_block", (4, 3, 3, 3, 4), length=range(len(widths) + 1, len(widths) + 2), high=64)
    scaling = values.flags("spatio_temporal_scaling", (True, True, True, False), length=len(widths))
    kwargs: dict[str, Any] = {
        "in_channels": values.count("in_channels", 3, high=16),
        "out_channels": values.count("out_channels", 3, high=16),
        "latent_channels": values.count("latent_channels", 128, high=MAX_VAE_WIDTH),
        "block_out_channels": widths,
        "decoder_block_out_channels": widths,
        "layers_per_block": layers,
        "decoder_layers_per_block": layers,
        "spatio_temporal_scaling": scaling,
        "decoder_spatio_temporal_scaling": scaling,
        "patch_size": values.count("patch_size", 4, high=64),
        "patch_size_t": values.count("patch_size_t", 1, high=64),
        "resnet_norm_eps": values.number("resnet_norm_eps", 1e-6, low=0.0, high=1.0),
        "scaling_factor": values.number("scaling_factor", 1.0, low=1e-6, high=1e6),
    }
    for key in ("encoder_causal", "decoder_causal"):
        if not isinstance(raw.get(key, key == "encoder_causal"), bool):
            raise InputError(f"invalid {path}: {key} must be true or false; {EXPECTED}")
        kwargs[key] = raw.get(key, key == "encoder_causal")
    return kwargs


def load_ltx_vae(folder: Path, dtype: torch.dtype) -> AutoencoderKLLTXVideo:
    path = inside(folder, folder / "config.json")
    kwargs = ltx_kwargs(path)
    checkpoint = ShardedCheckpoint.open(folder, WEIGHTS_STEM)
    with built_from(path, EXPECTED):
        require_fits(meta_bytes(lambda: AutoencoderKLLTXVideo(**kwargs), torch.finfo(dtype).bits // 8), "a VAE", path)
        with empty_weights():
            network = AutoencoderKLLTXVideo(**kwargs)
    loader = MetaLoader(network, "LTX-Video VAE", dtype)
    found: set[str] = set()
    for source, shard in checkpoint.shards():
        for name in STATISTICS.intersection(shard):  # real buffers (the loader fills meta parameters): copied in, their shape checked
            buffer, tensor = network.get_buffer(name), shard.pop(name)
            if tensor.shape != buffer.shape:
                raise InputError(f"{source} holds {name} of shape {tuple(tensor.shape)}, expected {tuple(buffer.shape)}; {EXPECTED}")
            buffer.copy_(tensor)
            found.add(name)
        loader.load(shard, source)
    if found != STATISTICS:
        raise InputError(f"{checkpoint.source} lacks {', '.join(sorted(STATISTICS - found))}: LTX-Video's latent statistics; {EXPECTED}")
    return loader.finish([checkpoint.source])


def load_video_vae(variant: str, folder: Path, dtype: torch.dtype) -> VideoVAE:
    """Pro's Wan VAE or Lite's LTX VAE behind the one interface the stages call."""
    if variant == "pro":
        return WanVideoVAE(load_vae(folder, "original", dtype))
    return LtxVideoVAE(load_ltx_vae(folder, dtype))
