"""Guidance parallelism: a step's predictions (conditional, text-dropped, unconditional) on different ranks.

Rank c of a guidance group of C ranks makes the predictions ``c, c + C, ...``
of the step's list, and one all-gather (padded to the most any rank makes)
gives every rank all of them in the original order, so every rank combines
them the same way and stays in step.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

import torch
import torch.distributed as dist
from torch import Tensor

from avatarstream.errors import InputError

C = TypeVar("C")


class GuidanceSplit:
    """Spreads the predictions of a step over a guidance group; callable like ``Module.predictions``."""

    def __init__(self, group: dist.ProcessGroup) -> None:
        self.group = group
        self.size = dist.get_world_size(group)
        self.rank = dist.get_rank(group)

    def __call__(self, conditions: Sequence[C], predict: Callable[[tuple[C, ...]], list[Tensor]]) -> list[Tensor]:
        conditions = tuple(conditions)
        if len(conditions) == 1:  # nothing to split (guidance off): every rank makes the one prediction
            return predict(conditions)
        mine = conditions[self.rank :: self.size]
        per_rank = -(-len(conditions) // self.size)
        local = predict(mine) if mine else []
        if not local:
            raise ValueError(f"guidance parallel over {self.size} ranks needs at least {self.size} predictions per step, got {len(conditions)}")
        stacked = torch.stack(local)
        padded = stacked.new_zeros((per_rank, *stacked.shape[1:]))
        padded[: len(local)] = stacked
        parts = [torch.empty_like(padded) for _ in range(self.size)]
        dist.all_gather(parts, padded, group=self.group)
        return [parts[i % self.size][i // self.size] for i in range(len(conditions))]


def check_guidance_split(predictions: int, cfg: int) -> None:
    """A clear error before any forward when a guidance group has more ranks than a step has predictions."""
    if cfg > 1 and predictions < cfg:
        what = "guidance is off (one prediction per step)" if predictions == 1 else f"a step makes {predictions} predictions"
        raise InputError(f"--parallel cfg={cfg}: {what}; use cfg={max(1, predictions)} or split the sequence with sp")
