"""Which 128-token blocks each query window attends to: FlashVSR's locality-constrained top-k block mask.

Per head, queries and keys are mean-pooled per window and scored against each
other; key windows farther than ``local_range // 2`` window rows or columns
(the same for every time slab, no clamping at the borders) are excluded
before a softmax over all key windows. Then, for each query slab, the entries
strictly greater than the (k+1)-th largest probability of that slab's whole
[query windows x key windows] matrix are kept, k = min(int(n_w^2 * topk_ratio) - 1,
entries - 1): even a huge ratio drops the weakest block, and a query window can
be left with no key block at all (its attention output is then 0).
"""

from __future__ import annotations

import math

import torch

from avatarstream.models.flashvsr.config import REFERENCE_AREA


def local_window_mask(rows: int, cols: int, local_range: int, device: torch.device) -> torch.Tensor:
    """[rows * cols, rows * cols] bool: key window j lies within ``local_range`` rows and columns of query window i."""
    r, c = torch.meshgrid(torch.arange(rows, device=device), torch.arange(cols, device=device), indexing="ij")
    r, c = r.reshape(-1), c.reshape(-1)
    half = local_range // 2

    def near(pos: torch.Tensor) -> torch.Tensor:
        start = pos[:, None] - half
        return (pos[None, :] >= start) & (pos[None, :] <= start + local_range - 1)

    return near(r) & near(c)


def topk_ratio(sparse_ratio: float, height: int, width: int) -> float:
    """The example script's ratio for an output of ``height`` x ``width`` pixels."""
    return sparse_ratio * REFERENCE_AREA / (height * width)


def block_mask(q_windows: torch.Tensor, k_windows: torch.Tensor, num_heads: int, local: torch.Tensor, ratio: float) -> torch.Tensor:
    """[heads, query windows, key windows] bool from queries and keys in window layout [windows, 128, D]."""
    per_slab = local.shape[0]
    q_slabs, k_slabs = q_windows.shape[0] // per_slab, k_windows.shape[0] // per_slab
    q = q_windows.mean(dim=1).unflatten(-1, (num_heads, -1)).transpose(0, 1)
    k = k_windows.mean(dim=1).unflatten(-1, (num_heads, -1)).transpose(0, 1)
    scores = torch.einsum("hld,hmd->hlm", q, k) / math.sqrt(q.shape[-1])
    scores = scores.masked_fill(~local.repeat(q_slabs, k_slabs), -math.inf)
    flat = torch.softmax(scores, dim=-1).reshape(num_heads * q_slabs, -1)
    k_top = max(0, min(flat.shape[1] - 1, int(per_slab * per_slab * ratio) - 1))
    threshold = torch.topk(flat, k=k_top + 1, dim=1).values[:, -1:]
    return (flat > threshold).reshape(num_heads, q_slabs * per_slab, k_slabs * per_slab)
