"""How the InfiniteTalk DiT splits over a sequence-parallel group (the runtime calls ``split_dit``).

Blocks run on the rank's latent frames: the token sequence, the rotary
table (per token) and the audio tokens (per frame) are cut to them, and the
text/image cross-attention, the frame-local audio attention and the FFN need
nothing more. Self-attention (``attn1``) gets a diffusers attention processor
that does what Wan's does (projections, q/k RMS norm across heads, rotary)
on local tokens and attends through the all-to-alls.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.distributed as dist
from diffusers.models.transformers.transformer_wan import WanAttention
from torch import nn

from avatarstream.models.infinitetalk.dit import InfiniteTalkBlock, InfiniteTalkDiT
from avatarstream.runtime.parallel.ulysses import FrameShards, SequenceSplit, check_heads, patched_latents


def _rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Wan's rotary embedding on [B, N, heads, d] with its interleaved (even, odd) pairs."""
    even, odd = x.unflatten(-1, (-1, 2)).unbind(-1)
    cos, sin = cos[..., 0::2], sin[..., 1::2]
    return torch.stack([even * cos - odd * sin, even * sin + odd * cos], dim=-1).flatten(-2).type_as(x)


class UlyssesSelfAttention:
    """A diffusers attention processor for Wan's ``attn1`` whose attention spans every rank's tokens."""

    def __init__(self, split: SequenceSplit) -> None:
        self.split = split

    def __call__(
        self,
        attn: WanAttention,
        hidden_states: torch.Tensor,
        encoder_hidden_states: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        rotary_emb: tuple[torch.Tensor, torch.Tensor] | None = None,
    ) -> torch.Tensor:
        if encoder_hidden_states is not None or attention_mask is not None:
            raise ValueError("the sequence-parallel processor is for self-attention without a mask (Wan's attn1)")
        if attn.fused_projections:
            q, k, v = attn.to_qkv(hidden_states).chunk(3, dim=-1)
        else:
            q, k, v = attn.to_q(hidden_states), attn.to_k(hidden_states), attn.to_v(hidden_states)
        q, k, v = (t.unflatten(2, (attn.heads, -1)) for t in (attn.norm_q(q), attn.norm_k(k), v))
        if rotary_emb is not None:
            q, k = _rotate(q, *rotary_emb), _rotate(k, *rotary_emb)
        out = self.split.attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)).transpose(1, 2)
        out = out.flatten(2, 3).type_as(q)
        return attn.to_out[1](attn.to_out[0](out))


def split_dit(network: nn.Module, group: dist.ProcessGroup) -> None:
    assert isinstance(network, InfiniteTalkDiT), "the InfiniteTalk family splits its DiT"
    check_heads(network.config.num_heads, dist.get_world_size(group), "the InfiniteTalk DiT")
    _, patch_h, patch_w = network.config.patch_size

    def localize(shards: FrameShards, args: tuple[Any, ...], kwargs: dict[str, Any], first: bool) -> tuple[tuple[Any, ...], dict[str, Any]]:
        hidden, context, temb, (cos, sin), audio_tokens = args
        if first:
            hidden = hidden[:, shards.local_tokens]
        rotary = (cos[:, shards.local_tokens], sin[:, shards.local_tokens])
        return (hidden, context, temb, rotary, audio_tokens[:, shards.local_frames]), kwargs

    split = SequenceSplit(group, network, list(network.blocks), network.proj_out, patched_latents(patch_h, patch_w), localize)
    for block in network.blocks:
        assert isinstance(block, InfiniteTalkBlock), "every block of the DiT is an InfiniteTalk block"
        block.attn1.set_processor(UlyssesSelfAttention(split))  # type: ignore[arg-type]  # diffusers takes any processor with its call signature
