"""How the demo family's A2V DiT splits over a sequence-parallel group (the runtime calls ``split_a2v``).

Each rank runs the blocks on its frames' video tokens; the reference tokens
(keys and values of every self-attention, never updated) stay whole on every
rank. The RoPE table holds the reference rows then the video rows: a rank
keeps the former and its own part of the latter. Frame-local audio tokens
are cut to the rank's frames; the output head's tokens are gathered.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.distributed as dist
from torch import nn

from avatarstream.models.demo import A2VDiT
from avatarstream.models.demo.blocks import DiTBlock
from avatarstream.runtime.parallel.ulysses import FrameShards, SequenceSplit, check_heads, patched_latents


def split_a2v(network: nn.Module, group: dist.ProcessGroup) -> None:
    assert isinstance(network, A2VDiT), "the demo family splits its A2V DiT"
    blocks = [block for block in network.blocks if isinstance(block, DiTBlock)]
    assert len(blocks) == len(network.blocks), "every block of the A2V DiT is a DiTBlock"
    check_heads(blocks[0].attn.heads, dist.get_world_size(group), "the demo A2V DiT")
    patch = network.patch_size

    def localize(shards: FrameShards, args: tuple[Any, ...], kwargs: dict[str, Any], first: bool) -> tuple[tuple[Any, ...], dict[str, Any]]:
        video, emb, rope, context = args
        if first:
            video = video[:, shards.local_tokens]
        memory_rows = rope.shape[0] - shards.frames * shards.tokens_per_frame
        rope = torch.cat([rope[:memory_rows], rope[memory_rows:][shards.local_tokens]])
        return (video, emb, rope, context), {**kwargs, "frame_context": kwargs["frame_context"][:, shards.local_frames]}

    split = SequenceSplit(group, network, blocks, network.head, patched_latents(patch, patch), localize)
    for block in blocks:
        block.attn.attend = split.attention
