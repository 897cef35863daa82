"""``--parallel frames=N``: the family's own parallel strategy, brought by this package (entry point ``avatarstream.parallel``).

The painter works frame by frame (its convolutions see no other frame), so
the frames of a block can be painted on different ranks and gathered: each
rank paints a contiguous share, one all-gather gives every rank the block.
Nothing in avatarstream names this strategy: the registry finds it, the
family declares what it splits (``PaintsFrames``), and the framework hands
that part its process group.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

import torch
import torch.distributed as dist

from avatarstream.plugin import ParallelGroups, Strategy

#: A file each rank appends "rank frames" to for every block it paints (set by the tests, to see the split happen).
PAINT_LOG = "AVATARSTREAM_COLOURBARS_PAINT_LOG"


class PaintsFrames:
    """What the family declares for ``frames``: a block's painting, whole here or shared over a group by frames."""

    def __init__(self) -> None:
        self.group: dist.ProcessGroup | None = None

    def __call__(self, paint: Callable[[torch.Tensor], torch.Tensor], pattern: torch.Tensor) -> torch.Tensor:
        """``paint`` over ``pattern``'s frames (dim 2): all here, or this rank's share and one all-gather."""
        if self.group is None:
            return self._logged(paint(pattern), 0)
        size, rank = dist.get_world_size(self.group), dist.get_rank(self.group)
        frames = pattern.shape[2]
        share = -(-frames // size)  # the last rank may have fewer (or none): padded for the gather, trimmed after
        mine = self._logged(paint(pattern[:, :, rank * share : (rank + 1) * share]), dist.get_rank())
        padded = mine.new_zeros((*mine.shape[:2], share, *mine.shape[3:]))
        padded[:, :, : mine.shape[2]] = mine
        parts = [torch.empty_like(padded) for _ in range(size)]
        dist.all_gather(parts, padded.contiguous(), group=self.group)
        return torch.cat(parts, dim=2)[:, :, :frames]

    @staticmethod
    def _logged(painted: torch.Tensor, rank: int) -> torch.Tensor:
        log = os.environ.get(PAINT_LOG)
        if log:
            with open(log, "a") as file:
                file.write(f"{rank} {painted.shape[2]}\n")
        return painted


class FrameSplit(Strategy):
    key = "frames"
    summary = "frames=N: a colour-bars block's frames painted over N ranks"

    def apply(self, parts: Sequence[Any], group: dist.ProcessGroup | None, groups: ParallelGroups) -> None:
        for part in parts:
            assert isinstance(part, PaintsFrames), "frames splits what the colourbars family declares"
            part.group = group
