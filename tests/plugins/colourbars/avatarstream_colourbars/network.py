"""The family's one network: a few 3-D convolutions that paint a latent from a bars pattern and the loudness."""

from __future__ import annotations

import torch
from torch import nn

LATENT_STRIDE = 4  # pixels per latent cell, each way


class Painter(nn.Module):
    """[1, 4, T, h, w] (RGB bars and loudness) -> [1, 3, T, h, w] latents; causal in time (it sees no later frame)."""

    def __init__(self, width: int = 8) -> None:
        super().__init__()
        self.inp = nn.Conv3d(4, width, kernel_size=(1, 3, 3), padding=(0, 1, 1))
        self.mid = nn.Conv3d(width, width, kernel_size=(1, 3, 3), padding=(0, 1, 1))
        self.out = nn.Conv3d(width, 3, kernel_size=1)

    def forward(self, pattern: torch.Tensor) -> torch.Tensor:
        residual = self.out(torch.relu(self.mid(torch.relu(self.inp(pattern)))))
        return pattern[:, :3] * (0.5 + pattern[:, 3:]) + 0.1 * torch.tanh(residual)
