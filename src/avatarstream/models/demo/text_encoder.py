"""Byte-level text encoder: no tokenizer files to ship, any language works."""

from __future__ import annotations

import torch
from torch import Tensor, nn

from .config import DemoConfig
from .layers import EncoderLayer

NULL_TOKEN = 256
"""Token of the empty prompt (ids 0..255 are UTF-8 bytes)."""


class TextEncoder(nn.Module):
    def __init__(self, cfg: DemoConfig) -> None:
        super().__init__()
        t = cfg.text
        self.max_length = t.max_length
        self.dim = t.dim
        self.embed = nn.Embedding(NULL_TOKEN + 1, t.dim)
        self.position = nn.Parameter(torch.randn(t.max_length, t.dim) * 0.02)
        self.layers = nn.ModuleList(EncoderLayer(t.dim, t.heads) for _ in range(t.layers))
        self.norm = nn.LayerNorm(t.dim)

    def tokenize(self, prompt: str) -> Tensor:
        """UTF-8 bytes truncated to max_length -> LongTensor [1, N] (N >= 1)."""
        data = list(prompt.encode("utf-8")[: self.max_length]) or [NULL_TOKEN]
        return torch.tensor([data], dtype=torch.long)

    def forward(self, ids: Tensor) -> Tensor:
        """ids [B, N] -> [B, N, dim]."""
        if ids.ndim != 2 or not 1 <= ids.shape[1] <= self.max_length:
            raise ValueError(f"ids must be [B, N] with 1 <= N <= {self.max_length}, got {tuple(ids.shape)}")
        x = self.embed(ids) + self.position[: ids.shape[1]]
        for layer in self.layers:
            x = layer(x)
        return self.norm(x)
