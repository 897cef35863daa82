"""One-step, identity-aware latent super-resolution (base latent h x w -> 2h x 2w).

The upsampled base latent is partially re-noised to `t_start` and one
flow-matching Euler step to t = 0 is taken. Frames are independent (time is
folded into the batch, spatial attention only), which keeps it cheap and
chunk-invariant; identity comes from cross-attention to the full-resolution
reference latent, aligned with the frame grid by shared RoPE positions.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .blocks import DiTBlock, FinalLayer, TimestepEmbedding
from .config import SR_FACTOR, DemoConfig
from .patch import patchify, unpatchify
from .rope import Rope3D, grid_positions


class SRDiT(nn.Module):
    def __init__(self, cfg: DemoConfig) -> None:
        super().__init__()
        s = cfg.sr
        c = cfg.vae.latent_channels
        self.latent_channels = c
        self.patch_size = s.patch_size
        self.t_start = s.t_start
        self.patch_in = nn.Linear(2 * c * s.patch_size**2, s.dim)
        self.reference_in = nn.Linear(c * s.patch_size**2, s.dim)
        self.reference_norm = nn.LayerNorm(s.dim)
        self.time_embed = TimestepEmbedding(cfg.dit.freq_dim, s.dim)
        self.rope = Rope3D(s.dim // s.heads, cfg.dit.rope_theta)
        self.blocks = nn.ModuleList(DiTBlock(s.dim, s.heads, s.mlp_ratio, frame_local=False) for _ in range(s.layers))
        self.head = FinalLayer(s.dim, c * s.patch_size**2)

    def forward(self, low: Tensor, reference: Tensor, noise: Tensor) -> Tensor:
        """low [B, C, T, h, w]; reference [B, C, 2h, 2w]; noise [B, C, T, 2h, 2w]
        -> high-resolution latents [B, C, T, 2h, 2w]."""
        b, c, frames, h, w = low.shape
        hi_h, hi_w = SR_FACTOR * h, SR_FACTOR * w
        if c != self.latent_channels:
            raise ValueError(f"low must have {self.latent_channels} channels, got {c}")
        if tuple(noise.shape) != (b, c, frames, hi_h, hi_w) or tuple(reference.shape) != (b, c, hi_h, hi_w):
            raise ValueError(
                f"SRDiT: noise {tuple(noise.shape)} / reference {tuple(reference.shape)} do not match low {tuple(low.shape)} lifted by {SR_FACTOR}"
            )
        p = self.patch_size
        hp, wp = hi_h // p, hi_w // p

        t = self.t_start
        up = F.interpolate(_fold_frames(low), scale_factor=SR_FACTOR, mode="bilinear", align_corners=False)
        x_t = (1 - t) * up + t * _fold_frames(noise)  # [B*T, C, H, W]

        tokens = self.patch_in(patchify(torch.cat([x_t, up], dim=1).unsqueeze(2), p))
        ref = self.reference_norm(self.reference_in(patchify(reference.unsqueeze(2), p)))
        rope = self.rope(grid_positions(1, hp, wp, device=low.device))
        emb = self.time_embed(torch.full((1,), t, device=low.device))

        for block in self.blocks:
            tokens = block(tokens, emb, rope, ref, cross_rope=(rope, rope))
        v = unpatchify(self.head(tokens, emb), 1, hp, wp, p).squeeze(2)
        return (x_t - t * v).reshape(b, frames, c, hi_h, hi_w).transpose(1, 2)


def _fold_frames(x: Tensor) -> Tensor:
    """[B, C, T, H, W] -> [B*T, C, H, W]: every frame becomes its own sample."""
    b, c, frames, h, w = x.shape
    return x.transpose(1, 2).reshape(b * frames, c, h, w)
