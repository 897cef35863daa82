"""The two VAEs of FlashHead behind one interface: Pro's Wan 2.1 VAE and Lite's LTX-Video (0.9) VAE.

Each chunk is decoded whole and its motion frames encoded whole, with fresh
caches every call, as the reference does. Latents outside this file are
normalised per channel. Wan's decode is clamped to [-1, 1] and its encode is
the posterior mean; LTX's decode is not clamped and its encode is a posterior
sample, drawn here from the generator the caller gives (the reference draws
it from torch's global, unseeded generator).
"""

from __future__ import annotations

import torch
from diffusers.models.autoencoders.autoencoder_kl_ltx import AutoencoderKLLTXVideo
from diffusers.models.autoencoders.autoencoder_kl_wan import AutoencoderKLWan
from torch import nn

from avatarstream.components.wan import vae as wan


class WanVideoVAE(nn.Module):
    """Pro: the Wan 2.1 VAE (temporal stride 4, spatial 8)."""

    def __init__(self, vae: AutoencoderKLWan) -> None:
        super().__init__()
        self.vae = vae

    def decode(self, latents: torch.Tensor) -> torch.Tensor:
        """[1, C, T, h, w] -> [1, 3, 1 + 4 (T - 1), 8h, 8w] in [-1, 1]."""
        return wan.decode(self.vae, latents, wan.DecoderCache.for_vae(self.vae))

    def encode(self, pixels: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
        """[1, 3, 1 + 4k, H, W] -> the normalised posterior mean (no draw)."""
        return wan.encode(self.vae, pixels)


class LtxVideoVAE(nn.Module):
    """Lite: the LTX-Video 0.9 VAE (temporal stride 8, spatial 32), its latent statistics in its buffers."""

    def __init__(self, vae: AutoencoderKLLTXVideo) -> None:
        super().__init__()
        self.vae = vae

    def _stats(self, like: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        shape = (1, -1, 1, 1, 1)
        return self.vae.latents_mean.to(like).view(shape), self.vae.latents_std.to(like).view(shape)

    def decode(self, latents: torch.Tensor) -> torch.Tensor:
        """[1, C, T, h, w] -> [1, 3, 1 + 8 (T - 1), 32h, 32w], not clamped."""
        mean, std = self._stats(latents)
        video: torch.Tensor = self.vae.decode(latents * std + mean, return_dict=False)[0]
        return video

    def posterior(self, pixels: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The normalised posterior mean and standard deviation of [1, 3, 1 + 8k, H, W]."""
        dist = self.vae.encode(pixels, return_dict=False)[0]
        mean, std = self._stats(dist.mean)
        return (dist.mean - mean) / std, dist.std / std

    def encode(self, pixels: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
        """A normalised posterior sample, its noise drawn from ``generator`` (on the generator's device, then moved)."""
        dist = self.vae.encode(pixels, return_dict=False)[0]
        draw = torch.randn(dist.mean.shape, generator=generator, dtype=dist.mean.dtype, device=generator.device if generator else "cpu")
        mean, std = self._stats(dist.mean)
        return (dist.mean + dist.std * draw.to(dist.mean.device) - mean) / std


VideoVAE = WanVideoVAE | LtxVideoVAE
