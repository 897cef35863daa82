"""All networks of one FlashVSR checkpoint for one mode: the DiT, the LQ projection, the prompt, and the decoder."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from diffusers.models.autoencoders.autoencoder_kl_wan import AutoencoderKLWan

from avatarstream.components.wan.load_vae import load_vae
from avatarstream.errors import InputError
from avatarstream.families.flashvsr.layout import FlashVSRLayout
from avatarstream.families.flashvsr.load import LATENT_CHANNELS, load_dit, load_lq_proj, load_prompt, load_tcdecoder
from avatarstream.models.flashvsr.dit import FlashVSRDiT
from avatarstream.models.flashvsr.lq_proj import LQProjection
from avatarstream.models.flashvsr.tcdecoder import TCDecoder


@dataclass
class FlashVSRNetworks:
    """``decoder`` is the TCDecoder (tiny mode) or the Wan 2.1 VAE (full mode); ``prompt`` the fixed text embedding."""

    dit: FlashVSRDiT
    lq_proj: LQProjection
    decoder: TCDecoder | AutoencoderKLWan
    prompt: torch.Tensor

    @property
    def mode(self) -> str:
        return "tiny" if isinstance(self.decoder, TCDecoder) else "full"

    @classmethod
    def load(cls, layout: FlashVSRLayout, dtype: torch.dtype = torch.float32) -> FlashVSRNetworks:
        """The files ``layout`` names (its decoder says the mode), in ``dtype``; files that do not fit together are refused by name."""
        dit = load_dit(layout.dit, layout.config, dtype)
        lq_proj = load_lq_proj(layout.lq_proj, dtype)
        if lq_proj.config.out_dim != dit.config.dim or lq_proj.config.layer_num > dit.config.num_layers:
            raise InputError(
                f"{layout.lq_proj} projects to {lq_proj.config.out_dim} channels for {lq_proj.config.layer_num} blocks, but the DiT in "
                f"{layout.dit} is {dit.config.dim} wide with {dit.config.num_layers} blocks; the files are of different models"
            )
        decoder: TCDecoder | AutoencoderKLWan
        if layout.mode == "tiny":
            decoder = load_tcdecoder(layout.decoder, dtype)
        else:
            decoder = load_vae(layout.folder, "original", dtype)
            if decoder.config["z_dim"] != LATENT_CHANNELS:
                raise InputError(f"{layout.decoder} has {decoder.config['z_dim']} latent channels; FlashVSR decodes the Wan 2.1 VAE's {LATENT_CHANNELS}")
        return cls(dit, lq_proj, decoder, load_prompt(layout.prompt, dit.config.text_dim, dtype))
