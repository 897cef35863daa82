"""The Wan 2.1 VAE (diffusers' ``AutoencoderKLWan``) driven with caches that belong to the caller.

diffusers keeps the causal feature cache on the model instance, so two
sessions sharing one VAE would share it. Here each session holds its own
``DecoderCache``: a fixed list of the last two frames seen by every causal
convolution, so its size never grows with the number of chunks, and decoding
a latent sequence in any split gives exactly the frames of decoding it whole.
Latents outside this file are normalised, ``(mu - mean) / std`` per channel.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from diffusers.models.autoencoders.autoencoder_kl_wan import AutoencoderKLWan, WanCausalConv3d
from torch import nn

from avatarstream.components.wan.config import VAE_TEMPORAL_STRIDE, VAEConfig


def build_vae(config: VAEConfig) -> AutoencoderKLWan:
    return AutoencoderKLWan(**config.diffusers_kwargs())


def _causal_convs(part: nn.Module) -> int:
    return sum(isinstance(m, WanCausalConv3d) for m in part.modules())


def _stats(vae: AutoencoderKLWan, like: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    shape = (1, -1, 1, 1, 1)
    mean = torch.tensor(vae.config["latents_mean"], dtype=like.dtype).view(shape)
    std = torch.tensor(vae.config["latents_std"], dtype=like.dtype).view(shape)
    if like.device.type == "cuda":  # asynchronously: a plain copy from pageable memory would make the host wait for the stream
        mean, std = mean.pin_memory().to(like.device, non_blocking=True), std.pin_memory().to(like.device, non_blocking=True)
    return mean, std


@dataclass
class DecoderCache:
    """One session's causal decoder state: a fixed-length list of at most two frames per causal convolution."""

    features: list[torch.Tensor | None]
    frames_decoded: int = 0

    @classmethod
    def for_vae(cls, vae: AutoencoderKLWan) -> DecoderCache:
        return cls([None] * _causal_convs(vae.decoder))

    def nbytes(self) -> int:
        return sum(t.numel() * t.element_size() for t in self.features if isinstance(t, torch.Tensor))


@dataclass
class _EncoderCache:
    features: list[torch.Tensor | None] = field(default_factory=list)


def decode(vae: AutoencoderKLWan, latents: torch.Tensor, cache: DecoderCache, *, clamp: bool = True) -> torch.Tensor:
    """Normalised latents [B, 16, T, H, W] -> pixels [B, 3, F, 8H, 8W] in [-1, 1], continuing ``cache``.

    The first latent frame a cache sees gives 1 pixel frame, every later one 4.
    """
    mean, std = _stats(vae, latents)
    z = latents * std + mean
    out = []
    for i in range(z.shape[2]):
        frame = vae.post_quant_conv(z[:, :, i : i + 1])
        out.append(vae.decoder(frame, feat_cache=cache.features, feat_idx=[0], first_chunk=cache.frames_decoded == 0))
        cache.frames_decoded += 1
    video = torch.cat(out, dim=2)
    return video.clamp(-1.0, 1.0) if clamp else video


def encode(vae: AutoencoderKLWan, pixels: torch.Tensor) -> torch.Tensor:
    """Pixels [B, 3, 1+4k, H, W] in [-1, 1] -> normalised posterior mean [B, 16, 1+k, H/8, W/8] (no sampling)."""
    frames = pixels.shape[2]
    if (frames - 1) % VAE_TEMPORAL_STRIDE:
        raise ValueError(f"the VAE encodes 1 + {VAE_TEMPORAL_STRIDE}k frames, got {frames}")
    cache = _EncoderCache([None] * _causal_convs(vae.encoder))
    pieces = [pixels[:, :, :1]] + (list(pixels[:, :, 1:].split(VAE_TEMPORAL_STRIDE, dim=2)) if frames > 1 else [])
    hidden = torch.cat([vae.encoder(p, feat_cache=cache.features, feat_idx=[0]) for p in pieces], dim=2)
    mu = vae.quant_conv(hidden)[:, : vae.config["z_dim"]]
    mean, std = _stats(vae, mu)
    return (mu - mean) / std
