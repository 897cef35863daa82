"""FlashVSR's block mask and block-sparse attention without the CUDA kernel.

The attention is held to a plain per-block evaluation in float64 (softmax over
the kept blocks' tokens, 0 for a query block that keeps none); the FlexAttention
path's BlockMask is checked here with FlexAttention's unfused CPU evaluation
(the compiled CUDA kernel needs a GPU). The golden set's masks are checked by
the parity test.
"""

from __future__ import annotations

import math
import warnings

import pytest
import torch

from avatarstream.models.flashvsr import sparse_attention
from avatarstream.models.flashvsr.block_mask import block_mask, local_window_mask
from avatarstream.models.flashvsr.sparse_attention import block_sparse_attention

BLOCK = 128


def per_block(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    out = torch.zeros_like(q, dtype=torch.float64)
    for h in range(mask.shape[0]):
        for i in range(mask.shape[1]):
            kept = [j for j in range(mask.shape[2]) if mask[h, i, j]]
            if not kept:
                continue
            keys = torch.cat([k[h, j * BLOCK : (j + 1) * BLOCK] for j in kept]).double()
            values = torch.cat([v[h, j * BLOCK : (j + 1) * BLOCK] for j in kept]).double()
            queries = q[h, i * BLOCK : (i + 1) * BLOCK].double()
            out[h, i * BLOCK : (i + 1) * BLOCK] = torch.softmax(queries @ keys.T / math.sqrt(q.shape[-1]), dim=-1) @ values
    return out


@pytest.fixture
def case() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(0)
    heads, queries, keys, dim = 2, 3, 5, 16
    q, k, v = (torch.randn(heads, n * BLOCK, dim, generator=generator) for n in (queries, keys, keys))
    mask = torch.rand(heads, queries, keys, generator=generator) > 0.5
    mask[0, 1] = False  # a query block with no key block
    mask[1, 2] = True
    return q, k, v, mask


def test_the_masked_dense_path_is_exact_and_an_empty_block_gives_zero(case: tuple[torch.Tensor, ...]) -> None:
    q, k, v, mask = case
    out = block_sparse_attention(q, k, v, mask)
    assert torch.isfinite(out).all()
    assert (out[0, BLOCK : 2 * BLOCK] == 0).all()
    assert (out.double() - per_block(q, k, v, mask)).abs().max() < 1e-5


def test_the_dense_path_in_small_steps_gives_the_same(case: tuple[torch.Tensor, ...], monkeypatch: pytest.MonkeyPatch) -> None:
    q, k, v, mask = case
    whole = block_sparse_attention(q, k, v, mask)
    monkeypatch.setattr(sparse_attention, "DENSE_MASK_ELEMENTS", 1)  # one query block per step
    assert torch.equal(block_sparse_attention(q, k, v, mask), whole)


def test_the_flex_attention_block_mask_keeps_the_same_blocks(case: tuple[torch.Tensor, ...], monkeypatch: pytest.MonkeyPatch) -> None:
    from torch.nn.attention.flex_attention import flex_attention

    q, k, v, mask = case
    monkeypatch.setattr(sparse_attention, "_compiled_flex", lambda: flex_attention)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "called without torch.compile": the unfused evaluation is the point here
        out = sparse_attention._flex(q, k, v, mask)
    empty = (~mask.any(-1)).repeat_interleave(BLOCK, 1)
    assert (out[~empty].double() - per_block(q, k, v, mask)[~empty]).abs().max() < 1e-5


def test_the_local_window_is_not_clamped_at_the_borders() -> None:
    local = local_window_mask(3, 5, 3, torch.device("cpu")).view(3, 5, 3, 5)
    assert local[1, 2].sum() == 9 and local[1, 2, 0:3, 1:4].all()
    assert local[0, 0].sum() == 4 and local[0, 0, 0:2, 0:2].all()  # not shifted inwards to a full 3x3
    even = local_window_mask(1, 6, 4, torch.device("cpu")).view(6, 6)
    assert even[3].tolist() == [False, True, True, True, True, False]  # an even range reaches 2 back and 1 ahead


def test_even_a_huge_ratio_drops_the_weakest_block_of_each_slab() -> None:
    generator = torch.Generator().manual_seed(1)
    per_slab, heads = 4, 2
    q, k = torch.randn(2 * per_slab, BLOCK, 32, generator=generator), torch.randn(3 * per_slab, BLOCK, 32, generator=generator)
    mask = block_mask(q, k, heads, torch.ones(per_slab, per_slab, dtype=torch.bool), 1e6)
    assert mask.shape == (heads, 2 * per_slab, 3 * per_slab)
    assert mask.view(heads, 2, -1).sum(-1).eq(per_slab * 3 * per_slab - 1).all()
