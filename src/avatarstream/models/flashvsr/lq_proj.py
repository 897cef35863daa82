"""The LQ projection (``Buffer_LQ4x_Proj``): the upscaled low-resolution frames as tokens added to the DiT's hidden state.

Four frames give one latent frame of tokens (one per 16x16 pixels): a 16x16
pixel-unshuffle (768 channels), a causal conv (4, 3, 3) with time stride 2,
RMS norm, SiLU, a second such conv, RMS norm, SiLU, then one linear layer per
DiT block fed. The reference's streaming call writes each conv's time cache
from the current group before using it, so every 4-frame group is processed
alone, its own last two frames replicated in front; that is what ``forward``
computes, so the projection holds no state between groups. Latent frame j is
fed the group of frames 4j+1 .. 4j+4 (frame 0 only primes the reference's
cache, which the next group overwrites).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from avatarstream.models.flashvsr.config import FRAMES_PER_LATENT, LQProjConfig

#: Frames each causal conv takes from the previous clip (replaced by the group's own last frames in the reference).
CACHE_FRAMES = 2


class ChannelRMSNorm(nn.Module):
    """L2 norm over channels times sqrt(channels) and a learned gain (the Wan VAE's ``RMS_norm``, no bias)."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.scale = dim**0.5
        self.gamma = nn.Parameter(torch.ones(dim, 1, 1, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.normalize(x, dim=1) * self.scale * self.gamma


def _causal_conv(conv: nn.Conv3d, x: torch.Tensor) -> torch.Tensor:
    """The group's last two frames in front (its own "cache"), edges replicated by one pixel, then the strided conv."""
    x = torch.cat([x[:, :, -CACHE_FRAMES:], x], dim=2)
    return conv(F.pad(x, (1, 1, 1, 1, 0, 0), mode="replicate"))


class LQProjection(nn.Module):
    def __init__(self, config: LQProjConfig) -> None:
        super().__init__()
        self.config = config
        unshuffled = config.in_dim * config.unshuffle * config.unshuffle
        self.conv1 = nn.Conv3d(unshuffled, config.hidden_dim1, (4, 3, 3), stride=(2, 1, 1))
        self.norm1 = ChannelRMSNorm(config.hidden_dim1)
        self.conv2 = nn.Conv3d(config.hidden_dim1, config.hidden_dim2, (4, 3, 3), stride=(2, 1, 1))
        self.norm2 = ChannelRMSNorm(config.hidden_dim2)
        self.linear_layers = nn.ModuleList(nn.Linear(config.hidden_dim2, config.out_dim) for _ in range(config.layer_num))

    def forward(self, group: torch.Tensor) -> list[torch.Tensor]:
        """Four frames [1, 3, 4, H, W] in [-1, 1] -> per fed block, tokens [1, H/16 * W/16, out_dim] of one latent frame."""
        if group.shape[2] != FRAMES_PER_LATENT:
            raise ValueError(f"the LQ projection takes groups of {FRAMES_PER_LATENT} frames, got {group.shape[2]}")
        s = self.config.unshuffle
        b, c, f, h, w = group.shape
        x = group.view(b, c, f, h // s, s, w // s, s).permute(0, 1, 4, 6, 2, 3, 5).reshape(b, c * s * s, f, h // s, w // s)
        x = F.silu(self.norm1(_causal_conv(self.conv1, x)))
        x = F.silu(self.norm2(_causal_conv(self.conv2, x)))
        tokens = x.flatten(2).transpose(1, 2)
        return [layer(tokens) for layer in self.linear_layers]

    def project(self, frames: torch.Tensor) -> list[torch.Tensor]:
        """Frames [1, 3, 4n, H, W] (n groups) -> per fed block, the n latent frames' tokens one after another."""
        groups = [self(g) for g in frames.split(FRAMES_PER_LATENT, dim=2)]
        return [torch.cat(per_layer, dim=1) for per_layer in zip(*groups, strict=True)]
