"""Reference encoder: turns the base-resolution reference latent into tokens.

One token per latent patch (so identity details stay spatial) plus a few
learned global tokens; the A2V DiT prepends them to the video tokens.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from .config import DemoConfig
from .layers import EncoderLayer
from .patch import patchify
from .rope import Rope3D, grid_positions


def reference_positions(global_tokens: int, height: int, width: int, time: float, device: torch.device | None = None) -> Tensor:
    """RoPE positions [G + h*w, 3] of reference tokens: global tokens at (time, 0, 0),
    then the patch grid at time `time`."""
    glob = torch.zeros(global_tokens, 3, device=device)
    glob[:, 0] = time
    return torch.cat([glob, grid_positions(1, height, width, time_offset=time, device=device)])


class ReferenceEncoder(nn.Module):
    def __init__(self, cfg: DemoConfig) -> None:
        super().__init__()
        d = cfg.dit
        self.patch_size = d.patch_size
        self.latent_channels = cfg.vae.latent_channels
        self.grid = cfg.base_latent_size // d.patch_size
        self.num_global = cfg.reference.global_tokens
        self.dim = d.dim
        self.patch_in = nn.Linear(cfg.vae.latent_channels * d.patch_size**2, d.dim)
        self.global_tokens = nn.Parameter(torch.randn(self.num_global, d.dim) * 0.02)
        self.rope = Rope3D(d.dim // d.heads, d.rope_theta)
        self.layers = nn.ModuleList(EncoderLayer(d.dim, d.heads, d.mlp_ratio) for _ in range(cfg.reference.layers))
        self.norm = nn.LayerNorm(d.dim)

    @property
    def num_tokens(self) -> int:
        return self.num_global + self.grid * self.grid

    def forward(self, latent: Tensor) -> Tensor:
        """latent [B, C, h, w] (base resolution) -> tokens [B, G + (h/p)*(w/p), dit_dim]."""
        if latent.ndim != 4 or latent.shape[1] != self.latent_channels:
            raise ValueError(f"reference latent must be [B, {self.latent_channels}, h, w], got {tuple(latent.shape)}")
        b, _, h, w = latent.shape
        patches = self.patch_in(patchify(latent.unsqueeze(2), self.patch_size))
        glob = self.global_tokens.to(patches.dtype).expand(b, -1, -1)
        x = torch.cat([glob, patches], dim=1)
        rope = self.rope(reference_positions(self.num_global, h // self.patch_size, w // self.patch_size, 0.0, latent.device))
        for layer in self.layers:
            x = layer(x, rope)
        return self.norm(x)
