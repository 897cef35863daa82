"""FramePack motion tokens: the last 19 motion latent frames, the nearer the finer.

The nearest frame is patched like the video (1x2x2), the next 2 frames at
2x4x4 and the 16 before them at 4x8x8, so 19 frames of history cost about
1.5 frames of tokens. Fewer than 19 frames are zero-padded in front.
"""

from __future__ import annotations

import torch
from torch import nn

from avatarstream.models.liveavatar.config import FRAMEPACK_BUCKETS


class FramePackMotioner(nn.Module):
    def __init__(self, latent_channels: int, dim: int, buckets: tuple[int, ...] = FRAMEPACK_BUCKETS) -> None:
        super().__init__()
        self.buckets = buckets
        self.latent_channels = latent_channels
        self.proj = nn.Conv3d(latent_channels, dim, kernel_size=(1, 2, 2), stride=(1, 2, 2))
        self.proj_2x = nn.Conv3d(latent_channels, dim, kernel_size=(2, 4, 4), stride=(2, 4, 4))
        self.proj_4x = nn.Conv3d(latent_channels, dim, kernel_size=(4, 8, 8), stride=(4, 8, 8))

    def forward(self, motion: torch.Tensor) -> torch.Tensor:
        """Motion latents [B, C, T, H, W] -> tokens [B, N, dim], nearest bucket first."""
        total = sum(self.buckets)
        padded = motion.new_zeros(*motion.shape[:2], total, *motion.shape[3:])
        keep = min(total, motion.shape[2])
        if keep:
            padded[:, :, total - keep :] = motion[:, :, motion.shape[2] - keep :]
        far, mid, near = padded.split(list(self.buckets)[::-1], dim=2)
        tokens = [proj(x).flatten(2).transpose(1, 2) for proj, x in ((self.proj, near), (self.proj_2x, mid), (self.proj_4x, far))]
        return torch.cat(tokens, dim=1)
