"""Guidance parallelism: a step's predictions (conditional, text-dropped, unconditional) on different ranks.

Rank c of a guidance group of C ranks makes the predictions ``c, c + C, ...``
of the step's list, and one all-gather (padded to the most any rank makes)
gives every rank all of them in the original order, so every rank combines
them the same way and stays in step.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import torch
import torch.distributed as dist
from torch import Tensor

from avatarstream.errors import InputError
from avatarstream.runtime.parallel.strategy import Strategy

if TYPE_CHECKING:
    from avatarstream.runtime.parallel.groups import ParallelGroups

C = TypeVar("C")


class GuidanceSplit:
    """Spreads the predictions of a step over a guidance group; callable like ``GuidedPredictions``."""

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


class GuidedPredictions:
    """What a model declares for ``cfg``: a stage's guidance predictions per step, made through this object.

    Called with a step's conditions and the function that predicts some of
    them, it returns every condition's prediction in order: all made here, or,
    once ``cfg=C`` applied a guidance group, each rank's share gathered.
    """

    def __init__(self, per_step: int) -> None:
        self.per_step = per_step  # predictions a step makes (1: guidance off)
        self._split: GuidanceSplit | None = None

    def __call__(self, conditions: Sequence[C], predict: Callable[[tuple[C, ...]], list[Tensor]]) -> list[Tensor]:
        return predict(tuple(conditions)) if self._split is None else self._split(conditions, predict)


class GuidanceParallel(Strategy):
    """``cfg=C``: the guidance predictions of each step over C ranks, for models that declare ``GuidedPredictions``."""

    key = "cfg"
    summary = "cfg=C: a step's guidance predictions (conditional, unconditional, ...) over C ranks"

    def apply(self, parts: Sequence[Any], group: dist.ProcessGroup | None, groups: ParallelGroups) -> None:
        for part in parts:
            assert isinstance(part, GuidedPredictions), "cfg splits what a model declares as GuidedPredictions"
            check_guidance_split(part.per_step, groups.layout.cfg)
            part._split = GuidanceSplit(group) if group is not None else None

    def refuse(self, size: int) -> str:
        return "this model makes one prediction per step (no guidance), so there is nothing to split; use sp"
