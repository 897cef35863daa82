"""The process groups of a layout, made once per process after the default group is up.

Generating ranks are numbered ``cfg_index * sp + sp_index`` (or
``step * sp + sp_index`` under ``steps=N``); the decode rank, when there is
one, is the last. Every rank creates every group (torch
requires it) in one fixed order. ``current()`` is what the runtime of each
pipeline built in this process uses; a process that never joined a group
gets the one-process layout, in which every split is a no-op.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import torch.distributed as dist

from avatarstream.runtime.parallel.control import ControlChannel
from avatarstream.runtime.parallel.layout import ParallelLayout

Role = Literal["lead", "follow", "decode"]


@dataclass
class ParallelGroups:
    layout: ParallelLayout
    rank: int = 0
    world: int = 1
    sp_group: dist.ProcessGroup | None = None  # this rank's sequence-parallel group (sp > 1, generating ranks)
    cfg_group: dist.ProcessGroup | None = None  # this rank's guidance group: the ranks at the same sp position (cfg > 1)
    shard_group: dist.ProcessGroup | None = None  # what FSDP2 shards over: the sp group, or every rank without a layout
    step_group: dist.ProcessGroup | None = None  # steps=N: one rank per step (at this sp position), handing each block on
    to_decoder: dist.ProcessGroup | None = None  # the rank holding the final latents (the lead, or the last step's) -> decode rank
    from_decoder: dist.ProcessGroup | None = None  # finishing rank -> lead: frames (its own group: sends and receives run on two threads)
    control: ControlChannel | None = None

    @property
    def distributed(self) -> bool:
        return self.world > 1

    @property
    def role(self) -> Role:
        if self.rank == 0:
            return "lead"
        return "decode" if self.rank == self.layout.decode_rank else "follow"

    @property
    def holds_final_latents(self) -> bool:
        """Whether this follower hands the final latents on (the last step's first rank under ``steps=N``)."""
        return self.layout.steps > 1 and self.rank == self.layout.last_step_rank


_current = ParallelGroups(ParallelLayout())


def current() -> ParallelGroups:
    return _current


def join(layout: ParallelLayout, control: ControlChannel) -> ParallelGroups:
    """Make this process's groups for ``layout`` (the default group must be up) and make them ``current()``."""
    global _current
    rank, world = dist.get_rank(), dist.get_world_size()
    sp, cfg = layout.sp, layout.cfg
    groups = ParallelGroups(layout, rank, world, control=control)
    generating = range(layout.generating_ranks)
    if layout.steps > 1:
        _join_steps(groups, layout)
    elif layout.splits:
        for c in range(cfg):  # sp groups: one per guidance index
            ranks = [c * sp + s for s in range(sp)]
            group = dist.new_group(ranks)
            if rank in ranks:
                groups.sp_group = group if sp > 1 else None
                groups.shard_group = group
        for s in range(sp):  # cfg groups: one per sp position
            group = dist.new_group([c * sp + s for c in range(cfg)])
            if rank in generating and rank % sp == s and cfg > 1:
                groups.cfg_group = group
        if layout.decode_rank is not None:
            pair = [0, layout.decode_rank]
            groups.to_decoder, groups.from_decoder = dist.new_group(pair), dist.new_group(pair)
            if rank == layout.decode_rank:
                groups.shard_group = dist.new_group([rank], use_local_synchronization=True)
    else:
        groups.shard_group = dist.group.WORLD
    _current = groups
    return groups


def _join_steps(groups: ParallelGroups, layout: ParallelLayout) -> None:
    """``steps=N[,sp=S]``: an sp group per step and a step group per sp position (rank ``step * sp + s``: each sp rank of a
    step hands the block, which every rank of the step holds whole, to the same sp rank of the next step); frames come
    to the lead from the finishing rank, final latents go from the last step's first rank to a decode rank. Each rank
    holds its whole DiT (a sharded one is sharded over this rank alone)."""
    sp = layout.sp
    for s in range(sp):
        ranks = [step * sp + s for step in range(layout.steps)]
        group = dist.new_group(ranks)
        if groups.rank in ranks:
            groups.step_group = group
    for step in range(layout.steps if sp > 1 else 0):
        ranks = [step * sp + s for s in range(sp)]
        group = dist.new_group(ranks)
        if groups.rank in ranks:
            groups.sp_group = group
    groups.from_decoder = dist.new_group([0, layout.finishing_rank])
    if layout.decode:
        groups.to_decoder = dist.new_group([layout.last_step_rank, layout.finishing_rank])
    groups.shard_group = dist.new_group([groups.rank], use_local_synchronization=True)


def leave() -> None:
    global _current
    _current = ParallelGroups(ParallelLayout())
