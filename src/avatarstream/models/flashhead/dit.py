"""The SoulX-FlashHead DiT (``WanModelAudioProject``): Wan 2.1 blocks whose only cross-attention is to the audio.

The input is the noisy latent beside the reference latent (channel concat),
patchified; each block runs adaLN self-attention (RMS q/k norm over the full
width, 3-D RoPE), then an ungated cross-attention in which the tokens of
latent frame j attend only to the audio tokens of frame j, then an adaLN FFN.
The head is modulated by the time embedding itself. ``text_embedding`` and
``audio_emb`` are in the checkpoint but unused, as in the reference.
Parameter names are the checkpoint's.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from avatarstream.models.flashhead.audio_adapter import AudioProjection
from avatarstream.models.flashhead.config import FlashHeadConfig
from avatarstream.models.flashhead.rope import apply_rope, grid_frequencies


def sinusoidal_embedding(dim: int, position: torch.Tensor) -> torch.Tensor:
    """[N] -> [N, dim] (cos, then sin), computed in float64 and returned in ``position``'s dtype."""
    exponents = torch.arange(dim // 2, dtype=torch.float64, device=position.device).div(dim // 2)
    sinusoid = torch.outer(position.to(torch.float64), torch.pow(10000, -exponents))
    return torch.cat([torch.cos(sinusoid), torch.sin(sinusoid)], dim=1).to(position.dtype)


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = x.float()
        return (y * torch.rsqrt(y.pow(2).mean(dim=-1, keepdim=True) + self.eps)).to(x.dtype) * self.weight


def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, heads: int) -> torch.Tensor:
    """[B, Lq, D] x [B, Lk, D] -> [B, Lq, D] over ``heads`` heads."""
    split = [t.unflatten(-1, (heads, -1)).transpose(1, 2) for t in (q, k, v)]
    return F.scaled_dot_product_attention(*split).transpose(1, 2).flatten(2)


class Attention(nn.Module):
    """q, k, v, o with RMS-normed queries and keys; self-attention takes RoPE rotations."""

    def __init__(self, dim: int, heads: int, eps: float) -> None:
        super().__init__()
        self.heads = heads
        self.q, self.k, self.v, self.o = (nn.Linear(dim, dim) for _ in range(4))
        self.norm_q = RMSNorm(dim, eps)
        self.norm_k = RMSNorm(dim, eps)

    def forward(self, x: torch.Tensor, context: torch.Tensor, freqs: torch.Tensor | None = None) -> torch.Tensor:
        q, k = self.norm_q(self.q(x)), self.norm_k(self.k(context))
        if freqs is not None:
            q = apply_rope(q.unflatten(-1, (self.heads, -1)), freqs).flatten(2)
            k = apply_rope(k.unflatten(-1, (self.heads, -1)), freqs).flatten(2)
        return self.o(attention(q, k, self.v(context), self.heads))


class Block(nn.Module):
    def __init__(self, config: FlashHeadConfig) -> None:
        super().__init__()
        dim, eps = config.dim, config.eps
        self.self_attn = Attention(dim, config.num_heads, eps)
        self.cross_attn = Attention(dim, config.num_heads, eps)
        self.norm1 = nn.LayerNorm(dim, eps=eps, elementwise_affine=False)
        self.norm2 = nn.LayerNorm(dim, eps=eps, elementwise_affine=False)
        self.norm3 = nn.LayerNorm(dim, eps=eps)
        self.ffn = nn.Sequential(nn.Linear(dim, config.ffn_dim), nn.GELU(approximate="tanh"), nn.Linear(config.ffn_dim, dim))
        self.modulation = nn.Parameter(torch.randn(1, 6, dim) / dim**0.5)

    def forward(self, x: torch.Tensor, audio_tokens: torch.Tensor, t_mod: torch.Tensor, freqs: torch.Tensor) -> torch.Tensor:
        shift, scale, gate, ffn_shift, ffn_scale, ffn_gate = (self.modulation.to(t_mod.dtype) + t_mod).chunk(6, dim=1)
        normed = self.norm1(x) * (1 + scale) + shift
        x = x + self.self_attn(normed, normed, freqs) * gate
        frames = audio_tokens.shape[1]
        per_frame = self.norm3(x).unflatten(1, (frames, -1)).flatten(0, 1)  # [B F, tokens of a frame, dim]
        x = x + self.cross_attn(per_frame, audio_tokens.flatten(0, 1)).unflatten(0, (x.shape[0], frames)).flatten(1, 2)
        return x + self.ffn(self.norm2(x) * (1 + ffn_scale) + ffn_shift) * ffn_gate


class Head(nn.Module):
    def __init__(self, config: FlashHeadConfig) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(config.dim, eps=config.eps, elementwise_affine=False)
        self.head = nn.Linear(config.dim, config.out_dim * math.prod(config.patch_size))
        self.modulation = nn.Parameter(torch.randn(1, 2, config.dim) / config.dim**0.5)

    def forward(self, x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        shift, scale = (self.modulation.to(t.dtype) + t[:, None]).chunk(2, dim=1)
        return self.head(self.norm(x) * (1 + scale) + shift)


class Unused(nn.Module):
    """``audio_emb``: an MLP the checkpoint holds and the forward never calls."""

    def __init__(self, in_dim: int, out_dim: int) -> None:
        super().__init__()
        self.proj = nn.Sequential(nn.LayerNorm(in_dim), nn.Linear(in_dim, in_dim), nn.GELU(), nn.Linear(in_dim, out_dim), nn.LayerNorm(out_dim))


class FlashHeadDiT(nn.Module):
    def __init__(self, config: FlashHeadConfig) -> None:
        super().__init__()
        self.config = config
        dim = config.dim
        self.patch_embedding = nn.Conv3d(config.in_dim, dim, kernel_size=config.patch_size, stride=config.patch_size)
        self.text_embedding = nn.Sequential(nn.Linear(config.text_dim, dim), nn.GELU(approximate="tanh"), nn.Linear(dim, dim))  # unused
        self.time_embedding = nn.Sequential(nn.Linear(config.freq_dim, dim), nn.SiLU(), nn.Linear(dim, dim))
        self.time_projection = nn.Sequential(nn.SiLU(), nn.Linear(dim, dim * 6))
        self.blocks = nn.ModuleList(Block(config) for _ in range(config.num_layers))
        self.head = Head(config)
        self.audio_emb = Unused(config.audio_emb_in_dim, dim)
        self.audio_proj = AudioProjection(config)

    def audio_tokens(self, audio: torch.Tensor) -> torch.Tensor:
        """Windows [B, frames, 5, L, C] -> tokens [B, latent frames, tokens, dim]."""
        return self.audio_proj(audio.to(self.patch_embedding.weight.dtype))

    def forward(self, x: torch.Tensor, timestep: torch.Tensor, audio: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """Velocity of ``x`` [B, out_dim, T, h, w] at ``timestep`` [1] (0..1000), given audio windows and the reference latent ``y``."""
        dtype = self.patch_embedding.weight.dtype
        patches = self.patch_embedding(torch.cat([x, y], dim=1).to(dtype))
        grid = (patches.shape[2], patches.shape[3], patches.shape[4])
        tokens = patches.flatten(2).transpose(1, 2)
        t = self.time_embedding(sinusoidal_embedding(self.config.freq_dim, timestep.to(dtype)))
        t_mod = self.time_projection(t).unflatten(1, (6, self.config.dim))
        context = self.audio_tokens(audio)
        freqs = grid_frequencies(self.config.head_dim, grid, tokens.device)
        for block in self.blocks:
            tokens = block(tokens, context, t_mod, freqs)
        return self.unpatchify(self.head(tokens, t), grid)

    def unpatchify(self, tokens: torch.Tensor, grid: tuple[int, int, int]) -> torch.Tensor:
        """[B, f h w, (pf ph pw c)] -> [B, c, f pf, h ph, w pw]."""
        pf, ph, pw = self.config.patch_size
        f, h, w = grid
        x = tokens.reshape(tokens.shape[0], f, h, w, pf, ph, pw, -1)
        return x.permute(0, 7, 1, 4, 2, 5, 3, 6).reshape(tokens.shape[0], -1, f * pf, h * ph, w * pw)
