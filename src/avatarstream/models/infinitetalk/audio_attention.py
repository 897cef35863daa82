"""The per-block audio cross-attention: each latent frame's visual tokens attend to that frame's audio tokens.

Single-speaker form: no q/k norm and no rotary embedding (the two-speaker
path, which adds both, is not implemented).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class AudioCrossAttention(nn.Module):
    """``audio_cross_attn``: queries from the video tokens, keys and values from one frame's audio tokens."""

    def __init__(self, dim: int, audio_dim: int, num_heads: int) -> None:
        super().__init__()
        self.num_heads = num_heads
        self.q_linear = nn.Linear(dim, dim)
        self.kv_linear = nn.Linear(audio_dim, 2 * dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, hidden: torch.Tensor, audio_tokens: torch.Tensor) -> torch.Tensor:
        """hidden [B, T*S, dim] (frame-major), audio_tokens [B, T, M, audio_dim] -> [B, T*S, dim]."""
        batch, frames = audio_tokens.shape[:2]
        per_frame = hidden.unflatten(1, (frames, -1)).flatten(0, 1)  # [B*T, S, dim]
        q = self.q_linear(per_frame).unflatten(-1, (self.num_heads, -1)).transpose(1, 2)
        k, v = self.kv_linear(audio_tokens.flatten(0, 1)).unflatten(-1, (2, self.num_heads, -1)).permute(2, 0, 3, 1, 4)
        out = F.scaled_dot_product_attention(q, k, v).transpose(1, 2).flatten(2)
        return self.proj(out).unflatten(0, (batch, frames)).flatten(1, 2)
