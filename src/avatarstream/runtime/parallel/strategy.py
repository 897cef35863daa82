"""Parallel strategies: each word of ``--parallel`` is one strategy object behind one protocol.

A strategy either splits the generating ranks ``N`` ways (``sp=N``, ``cfg=N``,
``steps=N``, or a plug-in's own word: an axis of the rank grid, with one
process group along it per rank) or adds a rank of its own (``decode``). A
family *declares* what each strategy may split in its ``PipelineSpec``
(``parallel={"sp": [part], ...}``): a part is an object of the strategy's
own kind (a network split by sequence, a step's guidance predictions, a
sampler's steps). When the pipeline is assembled, every strategy of the
layout hands each of its parts this rank's share (``apply``); a layout that
names a strategy the model declares nothing for is an ``InputError`` saying
what to use instead.

The strategies this package ships and those installed packages add are
listed in ``registry``; a package adds its own under the entry-point group
``avatarstream.parallel`` (``frames =
"my_package.strategy:FrameSplit"``), with no edit here or in ``pipeline/``.
"""

from __future__ import annotations

import importlib
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from avatarstream.errors import InputError
from avatarstream.runtime.parallel.registry import known

if TYPE_CHECKING:
    import torch.distributed as dist

    from avatarstream.runtime.parallel.groups import ParallelGroups


class Strategy(ABC):
    """One way to split a session over processes, named by its word in ``--parallel``."""

    key: ClassVar[str]
    #: one line for ``--help``: what it splits, for which models
    summary: ClassVar[str]
    #: True: a flag that adds one rank of its own (``decode``); False: ``key=N`` splits the generating ranks N ways
    adds_rank: ClassVar[bool] = False

    @abstractmethod
    def apply(self, parts: Sequence[Any], group: dist.ProcessGroup | None, groups: ParallelGroups) -> None:
        """Give each declared part this rank's share; ``group``: this rank's group along the strategy's axis (None on a
        rank outside it, such as a decode rank). Called for every layout that names the strategy, on every rank."""

    def refuse(self, size: int) -> str:
        """The advice when a layout names this strategy and the model declares nothing for it."""
        return f"this model declares nothing that {self.key}={size} splits; leave it out of --parallel"


class RoleStrategy(Strategy):
    """A strategy that adds a rank with a role of its own rather than splitting parts (``decode``)."""

    adds_rank = True

    def apply(self, parts: Sequence[Any], group: dist.ProcessGroup | None, groups: ParallelGroups) -> None:
        """Nothing to split: the rank's role does the work."""


def strategy(key: str) -> Strategy:
    """The strategy named ``key``; an unknown word is an InputError listing the known ones."""
    target = known(key)
    module_name, _, attribute = target.partition(":")
    try:
        cls = getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError) as exc:
        raise InputError(f"--parallel {key}: its strategy {target} cannot be imported: {exc}") from exc
    made: Strategy = cls()
    return made


def apply_declared(groups: ParallelGroups, declared: Mapping[str, Sequence[Any]]) -> None:
    """Hand every strategy the parts a model declared for it, with this rank's group (None where the layout does not name
    it: the parts then run whole here); a layout naming a strategy the model declares nothing for is an InputError. Every
    rank, before any forward and before the runtime places the weights (a sequence split hooks the network first)."""
    sizes = groups.layout.sizes
    for key in dict.fromkeys([*sizes, *declared]):
        chosen = strategy(key)
        parts = list(declared.get(key, ()))
        size = sizes.get(key, 1)
        if size > 1 and not parts:
            raise InputError(f"--parallel {key}={size}: {chosen.refuse(size)}")
        chosen.apply(parts, groups.axes.get(key), groups)
