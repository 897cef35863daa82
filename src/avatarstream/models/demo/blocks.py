"""DiT pieces: timestep embedding, adaLN-modulated block, output head.

Shared by the A2V and SR transformers: both modulate every block with the
flow-matching time, attend within the video tokens (3D RoPE) and cross-attend
to a global context; A2V additionally cross-attends frame-locally to audio.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .layers import MLP, CrossAttention, Rope, SelfAttention

MODULATION_STD = 0.02
"""Init std of adaLN projections: gates start small but non-zero, so a fresh
model is close to identity per block yet every path already contributes."""


def timestep_sinusoid(t: Tensor, dim: int, max_period: float = 10000.0) -> Tensor:
    """t [B] in [0, 1] -> [B, dim] float32 (t scaled by 1000 like common DiTs)."""
    half = dim // 2
    freqs = torch.exp(-math.log(max_period) * torch.arange(half, device=t.device, dtype=torch.float32) / half)
    args = t.float()[:, None] * 1000.0 * freqs[None]
    return torch.cat([args.cos(), args.sin()], dim=-1)


class TimestepEmbedding(nn.Module):
    def __init__(self, freq_dim: int, dim: int) -> None:
        super().__init__()
        self.freq_dim = freq_dim
        self.fc1 = nn.Linear(freq_dim, dim)
        self.fc2 = nn.Linear(dim, dim)

    def forward(self, t: Tensor) -> Tensor:
        x = timestep_sinusoid(t, self.freq_dim).to(self.fc1.weight.dtype)
        return self.fc2(F.silu(self.fc1(x)))


def _modulation(dim: int, chunks: int) -> nn.Linear:
    layer = nn.Linear(dim, chunks * dim)
    nn.init.normal_(layer.weight, std=MODULATION_STD)
    nn.init.zeros_(layer.bias)
    return layer


def _modulate(x: Tensor, shift: Tensor, scale: Tensor) -> Tensor:
    return x * (1 + scale) + shift


def _share(x: Tensor, batch: int) -> Tensor:
    """Repeat rows of a context-derived tensor so `batch` consecutive query rows share one."""
    if x.shape[0] == batch:
        return x
    if batch % x.shape[0]:
        raise ValueError(f"context batch {x.shape[0]} does not divide query batch {batch}")
    rep = batch // x.shape[0]
    return x.unsqueeze(1).expand(x.shape[0], rep, *x.shape[1:]).reshape(batch, *x.shape[1:])


class DiTBlock(nn.Module):
    """adaLN block: self-attn (RoPE, optional memory) -> cross-attn (context)
    -> [frame-local audio cross-attn] -> MLP."""

    def __init__(self, dim: int, heads: int, mlp_ratio: float, *, frame_local: bool) -> None:
        super().__init__()
        self.norm_attn = nn.LayerNorm(dim, elementwise_affine=False, eps=1e-6)
        self.attn = SelfAttention(dim, heads)
        self.norm_cross = nn.LayerNorm(dim, eps=1e-6)
        self.cross = CrossAttention(dim, heads)
        self.norm_local = nn.LayerNorm(dim, eps=1e-6) if frame_local else None
        self.local = CrossAttention(dim, heads) if frame_local else None
        self.norm_mlp = nn.LayerNorm(dim, elementwise_affine=False, eps=1e-6)
        self.mlp = MLP(dim, mlp_ratio)
        self.modulation = _modulation(dim, 6)

    def forward(
        self,
        x: Tensor,
        emb: Tensor,
        rope: Rope,
        context: Tensor,
        *,
        memory: Tensor | None = None,
        cross_rope: tuple[Rope, Rope] | None = None,
        frame_context: Tensor | None = None,
    ) -> Tensor:
        """x [B, T*L, D] (T frames of L tokens); emb [B or 1, D];
        rope: table of the memory tokens then of x; context [B', N, D] with B' dividing B
        (consecutive rows share one); memory [B, M, D]: keys/values prepended in
        self-attention (reference tokens); frame_context [B, T, A, D]: the L tokens
        of frame t cross-attend only to its A tokens."""
        mod = self.modulation(F.silu(emb)).unsqueeze(1).chunk(6, dim=-1)
        shift_a, scale_a, gate_a, shift_m, scale_m, gate_m = mod

        h = _modulate(self.norm_attn(x), shift_a, scale_a)
        m = None if memory is None else _modulate(self.norm_attn(memory), shift_a, scale_a)
        x = x + gate_a * self.attn(h, rope, m)

        q_rope, k_rope = cross_rope if cross_rope is not None else (None, None)
        kv = self.cross.kv(context, k_rope)
        kv = (_share(kv[0], x.shape[0]), _share(kv[1], x.shape[0]))
        x = x + self.cross(self.norm_cross(x), kv, q_rope)

        if self.local is not None:
            if frame_context is None:
                raise ValueError("this block needs frame_context (per-frame audio tokens)")
            x = x + self._frame_local(x, frame_context)

        return x + gate_m * self.mlp(_modulate(self.norm_mlp(x), shift_m, scale_m))

    def _frame_local(self, x: Tensor, frame_context: Tensor) -> Tensor:
        assert self.local is not None and self.norm_local is not None, "only frame-local blocks attend per frame"
        b, t, a, d = frame_context.shape
        if x.shape[1] % t:
            raise ValueError(f"{x.shape[1]} video tokens do not split into {t} frames")
        frames = x.reshape(b * t, x.shape[1] // t, d)
        kv = self.local.kv(frame_context.reshape(b * t, a, d))
        return self.local(self.norm_local(frames), kv).reshape(x.shape)


class FinalLayer(nn.Module):
    """adaLN-modulated norm + linear head back to patch values."""

    def __init__(self, dim: int, out_dim: int) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(dim, elementwise_affine=False, eps=1e-6)
        self.modulation = _modulation(dim, 2)
        self.proj = nn.Linear(dim, out_dim)

    def forward(self, x: Tensor, emb: Tensor) -> Tensor:
        shift, scale = self.modulation(F.silu(emb)).unsqueeze(1).chunk(2, dim=-1)
        return self.proj(_modulate(self.norm(x), shift, scale))
