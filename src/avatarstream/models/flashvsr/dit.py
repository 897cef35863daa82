"""The Wan2.1-T2V DiT as FlashVSR runs it: one step per call, a caller-owned KV cache, block-sparse self-attention.

A call takes the noisy latents of its frames (6 for the first call, 2 after)
and returns the velocity. Queries are the call's tokens; keys and values are
the cached time slabs of earlier calls followed by the call's own, in the
window layout of ``windows.py`` (post-norm, post-RoPE), and which 128-token
blocks each query window sees is chosen per head by ``block_mask.py``. After
the call the cache drops its oldest slab while it holds more than
``kv_slabs``. The cache may hold them in another dtype, or in fp8 with a
scale per token and head (``components/kv_storage.py``); a layer attends to
them in its own dtype. The LQ projection's tokens are added to the hidden
state before the first blocks (one per projection layer). Cross-attention
keys and values come once from the fixed prompt embedding (``cross_kv``).

Parameter names are the original checkpoint's (``blocks.N.self_attn.q`` ...).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import cast

import torch
import torch.nn.functional as F
from torch import nn

from avatarstream.components import kv_storage
from avatarstream.models.flashvsr.block_mask import block_mask, local_window_mask
from avatarstream.models.flashvsr.config import WINDOW, DiTConfig
from avatarstream.models.flashvsr.rope import apply_rope, grid_rotations
from avatarstream.models.flashvsr.sparse_attention import block_sparse_attention
from avatarstream.models.flashvsr.windows import partition, reverse, windows_per_slab

CrossKV = list[tuple[torch.Tensor, torch.Tensor]]


@dataclass(frozen=True)
class Sparsity:
    """How a call attends: the local window (in windows), the top-k ratio, and how many time slabs the cache keeps."""

    local_range: int
    topk_ratio: float
    kv_slabs: int


@dataclass(frozen=True)
class Grid:
    """A call's token grid and the absolute latent frame its first frame is."""

    frames: int
    height: int
    width: int
    first_frame: int


@dataclass
class KVCache:
    """One session's self-attention keys and values per layer, [windows, 128, dim] each, in whole time slabs.

    ``storage``: the dtype they are held in (None: as computed; ``float8_e4m3fn``: fp8 with a float32 scale per token
    and head, ``scales[layer]`` = (keys', values') [windows, 128, heads, 1]); a layer attends to them in its dtype."""

    keys: list[torch.Tensor | None]
    values: list[torch.Tensor | None]
    storage: torch.dtype | None = None
    scales: dict[int, tuple[torch.Tensor, torch.Tensor]] = field(default_factory=dict)

    @classmethod
    def empty(cls, layers: int, storage: torch.dtype | None = None) -> KVCache:
        return cls([None] * layers, [None] * layers, storage)

    def append(self, layer: int, k: torch.Tensor, v: torch.Tensor, heads: int, per_slab: int, kv_slabs: int) -> tuple[torch.Tensor, torch.Tensor]:
        """The cached keys and values of ``layer`` followed by the call's own, as a layer attends to them; the cache keeps
        them, less the oldest slab while they hold more than ``kv_slabs`` (the reference drops one)."""
        k_scale, v_scale = self.scales.get(layer, (None, None))
        keys, k_scale = self._joined(self.keys[layer], k_scale, k, heads)
        values, v_scale = self._joined(self.values[layer], v_scale, v, heads)
        attended = kv_storage.read(keys, k_scale, k.dtype).flatten(-2), kv_storage.read(values, v_scale, v.dtype).flatten(-2)
        drop = per_slab if keys.shape[0] // per_slab > kv_slabs else 0
        self.keys[layer], self.values[layer] = _kept(keys, drop).flatten(-2), _kept(values, drop).flatten(-2)
        if k_scale is not None and v_scale is not None:
            self.scales[layer] = (_kept(k_scale, drop), _kept(v_scale, drop))
        return attended

    def _joined(self, held: torch.Tensor | None, scale: torch.Tensor | None, new: torch.Tensor, heads: int) -> tuple[torch.Tensor, torch.Tensor | None]:
        """The held windows and ``new`` ones as stored, by head [windows, 128, heads, head_dim], with their fp8 scales."""
        data, new_scale = kv_storage.stored(new.unflatten(-1, (heads, -1)), self.storage)
        if held is None:
            return data, new_scale
        data = torch.cat([held.unflatten(-1, (heads, -1)), data])
        return data, None if scale is None or new_scale is None else torch.cat([scale, new_scale])

    def nbytes(self) -> int:
        """Bytes the cache keeps allocated (a view's whole storage)."""
        held = (*self.keys, *self.values, *(s for pair in self.scales.values() for s in pair))
        return sum(t.untyped_storage().nbytes() for t in held if t is not None)


def _kept(windows: torch.Tensor, drop: int) -> torch.Tensor:
    """``windows`` less the first ``drop``, in storage of their own: a view would keep the dropped slab allocated."""
    return windows[drop:].clone() if drop else windows


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        xf = x.float()
        return (xf * torch.rsqrt(xf.pow(2).mean(dim=-1, keepdim=True) + self.eps)).to(x.dtype) * self.weight


class Projections(nn.Module):
    """q/k/v/o with RMS-normed queries and keys (over all heads)."""

    def __init__(self, dim: int, num_heads: int, eps: float) -> None:
        super().__init__()
        self.num_heads = num_heads
        self.q, self.k, self.v, self.o = (nn.Linear(dim, dim) for _ in range(4))
        self.norm_q = RMSNorm(dim, eps)
        self.norm_k = RMSNorm(dim, eps)


class SelfAttention(Projections):
    def forward(
        self, x: torch.Tensor, rotations: torch.Tensor, grid: Grid, cache: KVCache, layer: int, sparsity: Sparsity, masks: list[torch.Tensor] | None
    ) -> torch.Tensor:
        heads, shape = self.num_heads, (grid.frames, grid.height, grid.width)
        q = partition(apply_rope(self.norm_q(self.q(x)), rotations, heads), *shape)
        k = partition(apply_rope(self.norm_k(self.k(x)), rotations, heads), *shape)
        per_slab = windows_per_slab(grid.height, grid.width)
        k, v = cache.append(layer, k, partition(self.v(x), *shape), heads, per_slab, sparsity.kv_slabs)
        local = local_window_mask(grid.height // WINDOW[1], grid.width // WINDOW[2], sparsity.local_range, x.device)
        mask = block_mask(q, k, heads, local, sparsity.topk_ratio)
        if masks is not None:
            masks.append(mask)

        def by_head(t: torch.Tensor) -> torch.Tensor:
            return t.reshape(-1, heads, t.shape[-1] // heads).transpose(0, 1)

        out = block_sparse_attention(by_head(q), by_head(k), by_head(v), mask)
        return self.o(reverse(out.transpose(0, 1).reshape(q.shape), *shape))


class CrossAttention(Projections):
    def context_kv(self, context: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.norm_k(self.k(context)), self.v(context)

    def forward(self, x: torch.Tensor, kv: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        def by_head(t: torch.Tensor) -> torch.Tensor:
            return t.unflatten(-1, (self.num_heads, -1)).transpose(1, 2)

        out = F.scaled_dot_product_attention(by_head(self.norm_q(self.q(x))), by_head(kv[0]), by_head(kv[1]))
        return self.o(out.transpose(1, 2).flatten(2))


class Block(nn.Module):
    def __init__(self, config: DiTConfig) -> None:
        super().__init__()
        dim, eps = config.dim, config.eps
        self.self_attn = SelfAttention(dim, config.num_heads, eps)
        self.cross_attn = CrossAttention(dim, config.num_heads, eps)
        self.norm1 = nn.LayerNorm(dim, eps, elementwise_affine=False)
        self.norm2 = nn.LayerNorm(dim, eps, elementwise_affine=False)
        self.norm3 = nn.LayerNorm(dim, eps)
        self.ffn = nn.Sequential(nn.Linear(dim, config.ffn_dim), nn.GELU(approximate="tanh"), nn.Linear(config.ffn_dim, dim))
        self.modulation = nn.Parameter(torch.zeros(1, 6, dim))

    def forward(
        self, x: torch.Tensor, t_mod: torch.Tensor, cross: tuple[torch.Tensor, torch.Tensor], rotations: torch.Tensor, grid: Grid,
        cache: KVCache, layer: int, sparsity: Sparsity, masks: list[torch.Tensor] | None,
    ) -> torch.Tensor:  # fmt: skip
        shift_msa, scale_msa, gate_msa, shift_mlp, scale_mlp, gate_mlp = (self.modulation.to(t_mod.dtype) + t_mod).chunk(6, dim=1)
        x = x + gate_msa * self.self_attn(self.norm1(x) * (1 + scale_msa) + shift_msa, rotations, grid, cache, layer, sparsity, masks)
        x = x + self.cross_attn(self.norm3(x), cross)
        return x + gate_mlp * self.ffn(self.norm2(x) * (1 + scale_mlp) + shift_mlp)


class Head(nn.Module):
    def __init__(self, config: DiTConfig) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(config.dim, config.eps, elementwise_affine=False)
        self.head = nn.Linear(config.dim, config.out_dim * math.prod(config.patch_size))
        self.modulation = nn.Parameter(torch.zeros(1, 2, config.dim))

    def forward(self, x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        shift, scale = (self.modulation.to(t.dtype) + t[:, None]).chunk(2, dim=1)
        return self.head(self.norm(x) * (1 + scale) + shift)


def sinusoid(dim: int, timestep: torch.Tensor) -> torch.Tensor:
    """Wan's timestep embedding, computed in float64 and returned in ``timestep``'s dtype."""
    half = dim // 2
    angles = torch.outer(timestep.double(), torch.pow(10000, -torch.arange(half, dtype=torch.float64, device=timestep.device).div(half)))
    return torch.cat([torch.cos(angles), torch.sin(angles)], dim=1).to(timestep.dtype)


@dataclass
class Timestep:
    """The one step's embedding ``t`` [1, dim] and its six modulations ``t_mod`` [1, 6, dim]."""

    t: torch.Tensor
    t_mod: torch.Tensor = field(repr=False)


class FlashVSRDiT(nn.Module):
    def __init__(self, config: DiTConfig) -> None:
        super().__init__()
        self.config = config
        dim = config.dim
        self.patch_embedding = nn.Conv3d(config.in_dim, dim, kernel_size=config.patch_size, stride=config.patch_size)
        self.text_embedding = nn.Sequential(nn.Linear(config.text_dim, dim), nn.GELU(approximate="tanh"), nn.Linear(dim, dim))
        self.time_embedding = nn.Sequential(nn.Linear(config.freq_dim, dim), nn.SiLU(), nn.Linear(dim, dim))
        self.time_projection = nn.Sequential(nn.SiLU(), nn.Linear(dim, dim * 6))
        self.blocks = nn.ModuleList(Block(config) for _ in range(config.num_layers))
        self.head = Head(config)

    def timestep(self, value: float, dtype: torch.dtype, device: torch.device) -> Timestep:
        t = self.time_embedding(sinusoid(self.config.freq_dim, torch.tensor([value], dtype=dtype, device=device)))
        return Timestep(t, self.time_projection(t).unflatten(1, (6, self.config.dim)))

    def cross_kv(self, context: torch.Tensor) -> CrossKV:
        """Every block's cross-attention keys and values from the prompt embedding [1, text_len, text_dim]."""
        embedded = self.text_embedding(context)
        return [cast(Block, block).cross_attn.context_kv(embedded) for block in self.blocks]

    def forward(
        self,
        x: torch.Tensor,
        step: Timestep,
        cross: CrossKV,
        lq_tokens: list[torch.Tensor],
        cache: KVCache,
        first_frame: int,
        sparsity: Sparsity,
        masks: list[torch.Tensor] | None = None,
    ) -> torch.Tensor:
        """Latents [1, 16, f, H, W] at absolute latent frame ``first_frame`` -> velocity of the same shape; ``cache`` moves on.

        ``masks`` (if given) receives each layer's block mask [heads, query windows, key windows].
        """
        tokens = self.patch_embedding(x)
        f, h, w = tokens.shape[2:]
        grid = Grid(f, h, w, first_frame)
        hidden = tokens.flatten(2).transpose(1, 2)
        rotations = grid_rotations(self.config.head_dim, first_frame, f, h, w, x.device)
        for i, block in enumerate(self.blocks):
            if i < len(lq_tokens):
                hidden = hidden + lq_tokens[i]
            hidden = block(hidden, step.t_mod, cross[i], rotations, grid, cache, i, sparsity, masks)
        out = self.head(hidden, step.t)
        pf, ph, pw = self.config.patch_size
        out = out.view(1, f, h, w, pf, ph, pw, -1).permute(0, 7, 1, 4, 2, 5, 3, 6)
        return out.reshape(1, -1, f * pf, h * ph, w * pw)
