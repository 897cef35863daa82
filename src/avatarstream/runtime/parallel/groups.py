"""The process groups of a layout, made once per process after the default group is up.

Generating ranks are numbered ``cfg_index * sp + sp_index`` (or
``step * sp + sp_index`` under ``steps=N``); the decode rank, when there is
one, is the last. Every rank creates every group (torch
requires it) in one fixed order. The groups are passed in where they are
used (``launch.RankInfo.groups`` -> ``build_pipeline(parallel=...)`` -> the
runtime, its policies and the strategies), never read from a global: a
process that joined no layout uses ``one_process()``, in which every split is
a no-op.
"""

from __future__ import annotations

from dataclasses import dataclass, field
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
    axes: dict[str, dist.ProcessGroup] = field(default_factory=dict)  # strategy word -> this rank's group along its axis (size > 1)
    shard_group: dist.ProcessGroup | None = None  # what FSDP2 shards over: the sp group, or every rank without a layout
    to_decoder: dist.ProcessGroup | None = None  # the rank holding the final latents (the lead, or the last step's) -> decode rank
    from_decoder: dist.ProcessGroup | None = None  # finishing rank -> lead: frames (its own group: sends and receives run on two threads)
    control: ControlChannel | None = None

    @property
    def sp_group(self) -> dist.ProcessGroup | None:
        """This rank's sequence-parallel group (sp > 1, generating ranks)."""
        return self.axes.get("sp")

    @property
    def cfg_group(self) -> dist.ProcessGroup | None:
        """This rank's guidance group: the ranks at the same sp position (cfg > 1)."""
        return self.axes.get("cfg")

    @property
    def step_group(self) -> dist.ProcessGroup | None:
        """steps=N: one rank per step (at this sp position), handing each block on."""
        return self.axes.get("steps")

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


def one_process() -> ParallelGroups:
    """The groups of a process that shares its session with no other: every split is a no-op."""
    return ParallelGroups(ParallelLayout())


def join(layout: ParallelLayout, control: ControlChannel) -> ParallelGroups:
    """Make this process's groups for ``layout`` (the default group must be up)."""
    groups = ParallelGroups(layout, dist.get_rank(), dist.get_world_size(), control=control)
    if layout.splits:
        _join_axes(groups, layout)
        _join_roles(groups, layout)
        if layout.steps > 1 or groups.role == "decode":  # each such rank holds its whole model: sharded over itself alone
            groups.shard_group = dist.new_group([groups.rank], use_local_synchronization=True)
    else:
        groups.shard_group = dist.group.WORLD
    return groups


def _join_axes(groups: ParallelGroups, layout: ParallelLayout) -> None:
    """A group along each axis of the rank grid for every position on the other axes (every rank makes every group, in one
    order). The sp axis has its groups even at size 1 when the steps are not split: FSDP2 shards within them."""
    stride = 1
    for key, size in layout.axes:
        if size > 1 or (key == "sp" and layout.steps == 1):
            for base in (r for r in range(layout.generating_ranks) if (r // stride) % size == 0):
                ranks = [base + i * stride for i in range(size)]
                group = dist.new_group(ranks)
                if groups.rank in ranks:
                    if size > 1:
                        groups.axes[key] = group
                    if key == "sp":
                        groups.shard_group = group
        stride *= size


def _join_roles(groups: ParallelGroups, layout: ParallelLayout) -> None:
    """The point-to-point groups of the roles: final latents to the decode rank, frames back to the lead."""
    if layout.steps > 1:
        groups.from_decoder = dist.new_group([0, layout.finishing_rank])
        if layout.decode:
            groups.to_decoder = dist.new_group([layout.last_step_rank, layout.finishing_rank])
    elif layout.decode_rank is not None:
        pair = [0, layout.decode_rank]
        groups.to_decoder, groups.from_decoder = dist.new_group(pair), dist.new_group(pair)
