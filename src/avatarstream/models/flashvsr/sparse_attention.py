"""Block-sparse attention over 128-token blocks without a CUDA-only kernel.

Head h attends, for each block of 128 queries, to the tokens of the key blocks
its mask keeps: an exact softmax over those tokens, scale 1/sqrt(head_dim); a
query block that keeps no key block outputs 0 (Block-Sparse-Attention's
"empty line"). On CUDA this runs as FlexAttention with a ``BlockMask`` built
from the block mask (compiled once); elsewhere as dense attention masked per
block, a few query blocks at a time so the mask never grows past a bound.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any

import torch
import torch.nn.functional as F

from avatarstream.models.flashvsr.config import WINDOW_TOKENS

#: Mask elements (query x key tokens x heads) one step of the masked dense path may build.
DENSE_MASK_ELEMENTS = 1 << 26


def block_sparse_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """q [heads, Lq, d], k / v [heads, Lk, d], mask [heads, Lq / 128, Lk / 128] bool -> [heads, Lq, d]."""
    out = _flex(q, k, v, mask) if q.is_cuda else _masked_dense(q, k, v, mask)
    empty = ~mask.any(dim=-1)
    return out.masked_fill(empty.repeat_interleave(WINDOW_TOKENS, dim=1)[..., None], 0.0)


def _masked_dense(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    heads, blocks = mask.shape[0], mask.shape[1]
    step = max(1, DENSE_MASK_ELEMENTS // (heads * WINDOW_TOKENS * k.shape[1]))
    out = []
    for first in range(0, blocks, step):
        rows = mask[:, first : first + step].repeat_interleave(WINDOW_TOKENS, dim=1).repeat_interleave(WINDOW_TOKENS, dim=2)
        queries = q[:, first * WINDOW_TOKENS : (first + step) * WINDOW_TOKENS]
        out.append(F.scaled_dot_product_attention(queries, k, v, attn_mask=rows))
    return torch.cat(out, dim=1)


@cache
def _compiled_flex() -> Callable[..., Any]:
    from torch.nn.attention.flex_attention import flex_attention

    return torch.compile(flex_attention, dynamic=False)


def _flex(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    from torch.nn.attention.flex_attention import BlockMask

    counts = mask.sum(dim=-1, dtype=torch.int32)[None]
    indices = torch.argsort(mask.to(torch.int8), dim=-1, descending=True, stable=True).to(torch.int32)[None]

    def keep(b: torch.Tensor, h: torch.Tensor, q_index: torch.Tensor, k_index: torch.Tensor) -> torch.Tensor:
        return mask[h, q_index // WINDOW_TOKENS, k_index // WINDOW_TOKENS]

    # every kept block is attended whole ("full" blocks: the fused kernel never evaluates ``keep``; the unfused one does)
    blocks = BlockMask.from_kv_blocks(
        torch.zeros_like(counts), indices, counts, indices, BLOCK_SIZE=WINDOW_TOKENS, mask_mod=keep, seq_lengths=(q.shape[1], k.shape[1])
    )
    out: torch.Tensor = _compiled_flex()(q[None], k[None], v[None], block_mask=blocks)
    return out[0]
