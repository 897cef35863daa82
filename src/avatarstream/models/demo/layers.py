"""Attention and MLP building blocks shared by every transformer in the family."""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .rope import apply_rope

Rope = Tensor
"""Complex rotation table [N, head_dim // 2] from `Rope3D`."""


def _heads(x: Tensor, heads: int, rope: Rope | None) -> Tensor:
    """[B, N, D] -> [B, heads, N, D // heads], rotated by `rope` when given."""
    x = x.unflatten(-1, (heads, -1))
    if rope is not None:
        x = apply_rope(x, rope)
    return x.transpose(1, 2)


def _attend(q: Tensor, k: Tensor, v: Tensor) -> Tensor:
    """[B, heads, N, d] attention -> [B, N, heads * d]."""
    return F.scaled_dot_product_attention(q, k, v).transpose(1, 2).flatten(2)


def dense_attention(q: Tensor, k: Tensor, v: Tensor, memory_keys: int = 0) -> Tensor:
    """[B, heads, N, d] attention over every key (the first ``memory_keys`` are memory tokens; here they are keys like the rest)."""
    return F.scaled_dot_product_attention(q, k, v)


Attend = Callable[[Tensor, Tensor, Tensor, int], Tensor]
"""(q, k, v [B, heads, N, d], memory keys in front) -> [B, heads, Nq, d]: how a self-attention attends (a runtime may split it)."""


class SelfAttention(nn.Module):
    """Multi-head self-attention with QK RMS-norm (keeps logits tame) and optional RoPE.

    Optional `memory` tokens are prepended to the keys/values only: they are
    attended to with the same projections but not updated (cheaper than
    carrying them through every layer as queries)."""

    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.q_norm = nn.RMSNorm(dim, eps=1e-6)
        self.k_norm = nn.RMSNorm(dim, eps=1e-6)
        self.out = nn.Linear(dim, dim)
        self.attend: Attend = dense_attention

    def forward(self, x: Tensor, rope: Rope | None = None, memory: Tensor | None = None) -> Tensor:
        """x [B, N, D]; memory [B, M, D] or None; rope covers the M memory then the N tokens."""
        seq = x if memory is None else torch.cat([memory, x], dim=1)
        q, k, v = self.qkv(seq).chunk(3, dim=-1)
        start = seq.shape[1] - x.shape[1]
        q = _heads(self.q_norm(q[:, start:]), self.heads, None if rope is None else rope[start:])
        k = _heads(self.k_norm(k), self.heads, rope)
        return self.out(self.attend(q, k, _heads(v, self.heads, None), start).transpose(1, 2).flatten(2))


class CrossAttention(nn.Module):
    """Queries from x, keys/values from a context.

    `kv()` is separate from `forward()` so keys/values of one context can be
    projected once and shared by many query rows (one reference, many frames).
    """

    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.q = nn.Linear(dim, dim)
        self.kv_proj = nn.Linear(dim, 2 * dim)
        self.q_norm = nn.RMSNorm(dim, eps=1e-6)
        self.k_norm = nn.RMSNorm(dim, eps=1e-6)
        self.out = nn.Linear(dim, dim)

    def kv(self, context: Tensor, rope: Rope | None = None) -> tuple[Tensor, Tensor]:
        """context [B, M, D] -> keys and values [B, heads, M, d]."""
        k, v = self.kv_proj(context).chunk(2, dim=-1)
        return _heads(self.k_norm(k), self.heads, rope), _heads(v, self.heads, None)

    def forward(self, x: Tensor, kv: tuple[Tensor, Tensor], rope: Rope | None = None) -> Tensor:
        q = _heads(self.q_norm(self.q(x)), self.heads, rope)
        return self.out(_attend(q, *kv))


class MLP(nn.Module):
    def __init__(self, dim: int, ratio: float) -> None:
        super().__init__()
        hidden = int(dim * ratio)
        self.fc1 = nn.Linear(dim, hidden)
        self.fc2 = nn.Linear(hidden, dim)

    def forward(self, x: Tensor) -> Tensor:
        return self.fc2(F.gelu(self.fc1(x)))


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
