"""Attention and MLP building blocks shared by every transformer in the family."""

from __future__ import annotations

import torch.nn.functional as F
from torch import Tensor, nn

from .rope import apply_rope

Rope = tuple[Tensor, Tensor]


def _split_heads(x: Tensor, heads: int) -> Tensor:
    b, n, d = x.shape
    return x.view(b, n, heads, d // heads).transpose(1, 2)


def _merge_heads(x: Tensor) -> Tensor:
    b, h, n, d = x.shape
    return x.transpose(1, 2).reshape(b, n, h * d)


class SelfAttention(nn.Module):
    """Multi-head self-attention with QK RMS-norm (keeps logits tame) and optional RoPE."""

    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.q_norm = nn.RMSNorm(dim // heads, eps=1e-6)
        self.k_norm = nn.RMSNorm(dim // heads, eps=1e-6)
        self.out = nn.Linear(dim, dim)

    def forward(self, x: Tensor, rope: Rope | None = None) -> Tensor:
        q, k, v = (_split_heads(t, self.heads) for t in self.qkv(x).chunk(3, dim=-1))
        q, k = self.q_norm(q), self.k_norm(k)
        if rope is not None:
            q, k = apply_rope(q, rope), apply_rope(k, rope)
        return self.out(_merge_heads(F.scaled_dot_product_attention(q, k, v)))


class CrossAttention(nn.Module):
    """Queries from x, keys/values from a context.

    `kv()` is separate from `forward()` so a caller can project a context once
    and share it (e.g. one reference for all frames of a batch).
    """

    def __init__(self, dim: int, heads: int, context_dim: int | None = None) -> None:
        super().__init__()
        self.heads = heads
        self.q = nn.Linear(dim, dim)
        self.kv_proj = nn.Linear(context_dim or dim, 2 * dim)
        self.q_norm = nn.RMSNorm(dim // heads, eps=1e-6)
        self.k_norm = nn.RMSNorm(dim // heads, eps=1e-6)
        self.out = nn.Linear(dim, dim)

    def kv(self, context: Tensor, rope: Rope | None = None) -> tuple[Tensor, Tensor]:
        k, v = (_split_heads(t, self.heads) for t in self.kv_proj(context).chunk(2, dim=-1))
        k = self.k_norm(k)
        return (apply_rope(k, rope) if rope is not None else k), v

    def forward(self, x: Tensor, kv: tuple[Tensor, Tensor], rope: Rope | None = None) -> Tensor:
        q = self.q_norm(_split_heads(self.q(x), self.heads))
        if rope is not None:
            q = apply_rope(q, rope)
        return self.out(_merge_heads(F.scaled_dot_product_attention(q, *kv)))


class MLP(nn.Module):
    def __init__(self, dim: int, ratio: float) -> None:
        super().__init__()
        hidden = int(dim * ratio)
        self.fc1 = nn.Linear(dim, hidden)
        self.fc2 = nn.Linear(hidden, dim)

    def forward(self, x: Tensor) -> Tensor:
        return self.fc2(F.gelu(self.fc1(x), approximate="tanh"))


class EncoderLayer(nn.Module):
    """Plain pre-norm transformer layer for the condition encoders (no time modulation)."""

    def __init__(self, dim: int, heads: int, mlp_ratio: float = 4.0) -> None:
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.attn = SelfAttention(dim, heads)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = MLP(dim, mlp_ratio)

    def forward(self, x: Tensor, rope: Rope | None = None) -> Tensor:
        x = x + self.attn(self.norm1(x), rope)
        return x + self.mlp(self.norm2(x))
