"""Causal VAE: per-frame image encoder, temporally causal cached decoder.

Spatial factor 8, temporal factor 1 (one latent frame per video frame). The
decoder's only temporal mixing is two kernel-3 causal convolutions at latent
resolution, so streaming decode needs just their last two input frames
(`VAEDecodeCache`, constant size). Upsampling is cheap: a 1x1 conv + pixel
shuffle to 2x, one small 3x3 conv, then a pixel shuffle by 4 to full size.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .config import VAE_SPATIAL_FACTOR, DemoConfig

TEMPORAL_KERNEL = 3


@dataclass(frozen=True)
class VAEDecodeCache:
    """Last TEMPORAL_KERNEL - 1 input frames of each causal conv, [B, 2, ch, h, w] each."""

    past: tuple[Tensor, ...]

    @property
    def nbytes(self) -> int:
        return sum(t.numel() * t.element_size() for t in self.past)


class ResBlock(nn.Module):
    """Per-frame 2D residual block (GroupNorm statistics never mix frames)."""

    def __init__(self, channels: int, groups: int) -> None:
        super().__init__()
        self.norm1 = nn.GroupNorm(groups, channels)
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1)
        self.norm2 = nn.GroupNorm(groups, channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1)

    def forward(self, x: Tensor) -> Tensor:
        h = self.conv1(F.silu(self.norm1(x)))
        return x + self.conv2(F.silu(self.norm2(h)))


class CausalTemporalBlock(nn.Module):
    """Residual kernel-3 conv over time that sees only the current and past frames.

    Equivalent to a Conv3d with kernel (3, 1, 1) and causal padding, written as
    a 1x1 Conv2d over the three stacked frames (fast on CPU)."""

    def __init__(self, channels: int, groups: int) -> None:
        super().__init__()
        self.norm = nn.GroupNorm(groups, channels)
        self.proj = nn.Conv2d(TEMPORAL_KERNEL * channels, channels, 1)

    def forward(self, x: Tensor, past: Tensor | None) -> tuple[Tensor, Tensor]:
        """x [B, T, ch, h, w]; past [B, 2, ch, h, w] or None (start: repeat the first frame)."""
        t = x.shape[1]
        y = F.silu(self.norm(x.flatten(0, 1))).view(x.shape)
        if past is None:
            past = y[:, :1].expand(-1, TEMPORAL_KERNEL - 1, -1, -1, -1)
        padded = torch.cat([past.to(y.dtype), y], dim=1)
        stacked = torch.cat([padded[:, i : i + t] for i in range(TEMPORAL_KERNEL)], dim=2)
        out = self.proj(stacked.flatten(0, 1)).view(x.shape)
        return x + out, padded[:, -(TEMPORAL_KERNEL - 1) :].clone()


class Encoder(nn.Module):
    """Per-frame image -> latent, 8x down (pixel-unshuffle, then two strided convs)."""

    def __init__(self, latent_channels: int, channels: int, groups: int) -> None:
        super().__init__()
        half = channels // 2
        self.net = nn.Sequential(
            nn.PixelUnshuffle(2),
            nn.Conv2d(12, half, 3, padding=1),
            nn.SiLU(),
            nn.Conv2d(half, channels, 3, stride=2, padding=1),
            nn.SiLU(),
            nn.Conv2d(channels, channels, 3, stride=2, padding=1),
            ResBlock(channels, groups),
            nn.GroupNorm(groups, channels),
            nn.SiLU(),
            nn.Conv2d(channels, latent_channels, 3, padding=1),
        )

    def forward(self, frames: Tensor) -> Tensor:
        return self.net(frames)


class Decoder(nn.Module):
    def __init__(self, latent_channels: int, channels: int, up_channels: int, groups: int) -> None:
        super().__init__()
        self.conv_in = nn.Conv2d(latent_channels, channels, 3, padding=1)
        self.temporal1 = CausalTemporalBlock(channels, groups)
        self.res = ResBlock(channels, groups)
        self.temporal2 = CausalTemporalBlock(channels, groups)
        self.norm_out = nn.GroupNorm(groups, channels)
        self.up = nn.Sequential(
            nn.Conv2d(channels, 4 * up_channels, 1), nn.PixelShuffle(2), nn.SiLU(), nn.Conv2d(up_channels, up_channels, 3, padding=1), nn.SiLU()
        )
        final = VAE_SPATIAL_FACTOR // 2
        self.to_rgb = nn.Sequential(nn.Conv2d(up_channels, 3 * final * final, 3, padding=1), nn.PixelShuffle(final))

    def forward(self, z: Tensor, cache: VAEDecodeCache | None) -> tuple[Tensor, VAEDecodeCache]:
        """z [B, T, C, h, w] -> rgb [B*T, 3, 8h, 8w] in [-1, 1]."""
        b, t = z.shape[:2]
        past = cache.past if cache is not None else (None, None)
        x = self.conv_in(z.flatten(0, 1))
        x, past1 = self.temporal1(x.view(b, t, *x.shape[1:]), past[0])
        x = self.res(x.flatten(0, 1))
        x, past2 = self.temporal2(x.view(b, t, *x.shape[1:]), past[1])
        x = self.up(F.silu(self.norm_out(x.flatten(0, 1))))
        return torch.tanh(self.to_rgb(x)), VAEDecodeCache((past1, past2))


class CausalVAE(nn.Module):
    def __init__(self, cfg: DemoConfig) -> None:
        super().__init__()
        v = cfg.vae
        self.latent_channels = v.latent_channels
        self.spatial_factor = VAE_SPATIAL_FACTOR
        self.encoder = Encoder(v.latent_channels, v.encoder_channels, v.groups)
        self.decoder = Decoder(v.latent_channels, v.decoder_channels, v.decoder_up_channels, v.groups)

    def encode(self, video: Tensor) -> Tensor:
        """video [B, 3, T, H, W] in [-1, 1] -> latents [B, C, T, H/8, W/8] (deterministic)."""
        if video.ndim != 5 or video.shape[1] != 3:
            raise ValueError(f"video must be [B, 3, T, H, W], got {tuple(video.shape)}")
        b, _, t, h, w = video.shape
        if h % self.spatial_factor or w % self.spatial_factor:
            raise ValueError(f"video size {h}x{w} is not divisible by {self.spatial_factor}")
        z = self.encoder(video.transpose(1, 2).flatten(0, 1))
        return z.view(b, t, *z.shape[1:]).transpose(1, 2)

    def decode(self, latents: Tensor, cache: VAEDecodeCache | None = None) -> tuple[Tensor, VAEDecodeCache]:
        """latents [B, C, T, h, w] -> (video [B, 3, T, 8h, 8w] in [-1, 1], cache for the next call).

        Decoding a sequence at once equals decoding it chunk by chunk while
        threading the returned cache through; cache=None starts a stream."""
        if latents.ndim != 5 or latents.shape[1] != self.latent_channels:
            raise ValueError(f"latents must be [B, {self.latent_channels}, T, h, w], got {tuple(latents.shape)}")
        if cache is not None:
            _check_cache(cache, latents)
        b, _, t = latents.shape[:3]
        rgb, cache = self.decoder(latents.transpose(1, 2), cache)
        return rgb.view(b, t, *rgb.shape[1:]).transpose(1, 2), cache


def _check_cache(cache: VAEDecodeCache, latents: Tensor) -> None:
    b, _, _, h, w = latents.shape
    shapes = [tuple(p.shape) for p in cache.past]
    if len(shapes) != 2 or any(s[0] != b or s[1] != TEMPORAL_KERNEL - 1 or s[3:] != (h, w) for s in shapes):
        raise ValueError(f"VAE cache {shapes} does not fit latents {tuple(latents.shape)}")
