"""How the LiveAvatar DiT splits over a sequence-parallel group (the runtime calls ``split_dit``).

A block's latent frames are shared out (whole frames per rank): its tokens,
their per-token modulation and rotary angles (their global positions), the
audio tokens of its frames and the head's time embedding are cut to the
rank's, so the text and audio cross-attentions and the FFN need nothing more.
The audio injectors' per-frame modulation (a few rows) is made for every
frame and then cut: a linear layer on a single row (a rank's one frame) takes
another CPU kernel, which rounds differently from the one-process run.
Self-attention trades tokens for heads (all-to-all) after the rotary: each
rank attends every token of the block with heads / S heads, against its step
caches and sink, which hold those heads alone, so the caches' memory splits
over the group too. The sink prefill runs whole on every rank (its tokens are
not frames); each keeps its heads of the result.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import torch
import torch.distributed as dist
from diffusers.models.normalization import AdaLayerNorm
from torch import nn

from avatarstream.errors import InputError
from avatarstream.models.liveavatar.config import BLOCK_FRAMES
from avatarstream.models.liveavatar.dit import Heads, S2VDiT
from avatarstream.runtime.parallel.ulysses import FrameShards, SequenceSplit, check_heads, heads_of, patched_latents


class UlyssesHeads(Heads):
    """This rank's share of the heads: the all-to-alls of the split's current forward."""

    def __init__(self, split: SequenceSplit, group: dist.ProcessGroup) -> None:
        self.split = split
        self.share = dist.get_world_size(group)
        self.rank = dist.get_rank(group)

    def local(self, x: torch.Tensor) -> torch.Tensor:
        return heads_of(x, self.rank, self.share, dim=-2).contiguous()  # a copy: the whole tensor can go

    def to_heads(self, x: torch.Tensor) -> torch.Tensor:
        return self.split.shards.sequence_to_heads(x.transpose(1, 2)).transpose(1, 2)

    def to_tokens(self, x: torch.Tensor) -> torch.Tensor:
        return self.split.shards.heads_to_sequence(x.transpose(1, 2)).transpose(1, 2)


def check_split(heads: int, sp: int) -> None:
    """A clear error before any forward: the heads must divide over the group, and every rank needs a frame of each block."""
    check_heads(heads, sp, "the LiveAvatar DiT")
    if sp > BLOCK_FRAMES:
        raise InputError(
            f"a LiveAvatar block has {BLOCK_FRAMES} latent frames, which sp={sp} ranks cannot share (each rank takes whole frames); use sp <= {BLOCK_FRAMES}"
        )


def split_dit(network: nn.Module, group: dist.ProcessGroup) -> None:
    assert isinstance(network, S2VDiT), "the LiveAvatar family splits its DiT"
    check_split(network.config.num_heads, dist.get_world_size(group))
    _, patch_h, patch_w = network.config.patch_size

    def localize(shards: FrameShards, args: tuple[Any, ...], kwargs: dict[str, Any], first: bool) -> tuple[tuple[Any, ...], dict[str, Any]]:
        hidden, mod, context, attend = args
        if first:
            hidden = hidden[:, shards.local_tokens]
        cos, sin = attend.rope
        mine = dataclasses.replace(attend, rope=(cos[shards.local_tokens], sin[shards.local_tokens]))
        return (hidden, mod[:, shards.local_tokens], context, mine), kwargs

    def local_audio(_module: nn.Module, args: tuple[Any, ...]) -> tuple[Any, ...]:
        index, hidden, audio, audio_global = args
        return index, hidden, audio[:, split.shards.local_frames], audio_global

    def local_modulation(_module: nn.Module, _args: tuple[Any, ...], output: torch.Tensor) -> torch.Tensor:
        shards = split.shards  # rows: (batch, frame) pairs
        return output.unflatten(0, (-1, shards.frames))[:, shards.local_frames].flatten(0, 1)

    def local_time(_module: nn.Module, args: tuple[Any, ...]) -> tuple[Any, ...]:
        hidden, emb = args
        return hidden, emb[:, split.shards.local_tokens]

    split = SequenceSplit(group, network, network.layers(), network.head, patched_latents(patch_h, patch_w), localize)
    network.audio_injector.register_forward_pre_hook(local_audio)
    if network.config.enable_adain:  # each frame's audio modulation is made for every frame, then cut: one row alone rounds otherwise
        for adain in network.audio_injector.injector_adain_layers:
            assert isinstance(adain, AdaLayerNorm), "the audio injectors' adaptive norms are diffusers' AdaLayerNorm"
            adain.linear.register_forward_hook(local_modulation)
    network.head.register_forward_pre_hook(local_time)
    network.heads = UlyssesHeads(split, group)
