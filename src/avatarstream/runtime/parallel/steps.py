"""Step parallelism (``--parallel steps=N``): each rank runs one denoising step of every block, as a pipeline.

For block-causal samplers whose steps each keep their own KV cache (timestep
forcing), step i of block b needs only step i-1's output of that block and
step i's own cache. Rank i therefore holds cache i alone, receives the block
from rank i-1, runs its step, and sends the result on without waiting: while
rank i runs block b, rank i-1 already runs block b+1. The last step's rank
holds the final latents. The ranks' hand-overs are point-to-point sends of
one block's latents; nothing else travels.

A stage drives its steps through the ``SplitsSteps`` its family declared
(``AllSteps`` in one process) and shares what only the last step knows (the
first clean latents, for a sink refresh) with ``share``.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import torch
import torch.distributed as dist

from avatarstream.errors import InputError
from avatarstream.runtime.parallel.stage_pipe import wire_device
from avatarstream.runtime.parallel.strategy import Strategy

if TYPE_CHECKING:
    from avatarstream.runtime.parallel.groups import ParallelGroups

#: One denoising step: (step index, the block's latents before it) -> after it.
Step = Callable[[int, torch.Tensor], torch.Tensor]
IN_FLIGHT = 2  # sends a rank keeps under way before waiting for the oldest (bounds memory, lets it run ahead)


class Shared:
    """A tensor the last step's rank made, here once ``get`` returns (a receive may still be under way until then)."""

    def __init__(self, tensor: torch.Tensor, receiving: dist.Work | None = None, device: torch.device | None = None) -> None:
        self._tensor, self._receiving, self._device = tensor, receiving, device

    def get(self) -> torch.Tensor:
        if self._receiving is not None:
            self._receiving.wait()
            self._receiving = None
            if self._device is not None:
                self._tensor = self._tensor.to(self._device)
        return self._tensor


class AllSteps:
    """One process runs every step of a block."""

    final_here = True

    def mine(self, steps: int) -> range:
        return range(steps)

    def __call__(self, x: torch.Tensor, steps: int, step: Step) -> torch.Tensor:
        for i in range(steps):
            x = step(i, x)
        return x

    def share(self, tensor: torch.Tensor) -> Shared:
        return Shared(tensor)


all_steps = AllSteps()


class SplitsSteps:
    """What a model declares for ``steps``: a sampler whose steps each keep their own state, run through this object.

    Callable like ``AllSteps`` (which it is until ``steps=N`` applies a step
    group: then this rank runs its one step of every block, ``StepSplit``).
    """

    def __init__(self) -> None:
        self.runner: AllSteps | StepSplit = all_steps

    def mine(self, steps: int) -> range:
        return self.runner.mine(steps)

    def __call__(self, x: torch.Tensor, steps: int, step: Step) -> torch.Tensor:
        return self.runner(x, steps, step)

    def share(self, tensor: torch.Tensor) -> Shared:
        return self.runner.share(tensor)


class StepParallel(Strategy):
    """``steps=N``: rank i runs denoising step i of every block while rank i-1 runs block b+1, for models that declare
    ``SplitsSteps``; the last step's rank holds the final latents (``roles``)."""

    key = "steps"
    summary = "steps=N: one denoising step of every block per rank, as a pipeline, for block-causal models with per-step caches"

    def apply(self, parts: Sequence[Any], group: dist.ProcessGroup | None, groups: ParallelGroups) -> None:
        for part in parts:
            assert isinstance(part, SplitsSteps), "steps splits what a model declares as SplitsSteps"
            part.runner = StepSplit(group) if group is not None else all_steps

    def refuse(self, size: int) -> str:
        return "this model's denoising steps share their state, so they cannot run on ranks of their own; use sp or cfg"


class StepSplit:
    """This rank's step of every block, between the ranks of the steps before and after it; callable like ``AllSteps``."""

    def __init__(self, group: dist.ProcessGroup) -> None:
        self.group = group
        self.size = dist.get_world_size(group)
        self.index = dist.get_rank(group)  # the step this rank runs (step ranks are the group's ranks, in order)
        self.ranks = dist.get_process_group_ranks(group)
        self.final_here = self.index == self.size - 1
        self._sending: deque[tuple[dist.Work, torch.Tensor]] = deque()

    def mine(self, steps: int) -> range:
        """The step this rank runs (its KV cache is the only one it holds)."""
        self._check(steps)
        return range(self.index, self.index + 1)

    def _check(self, steps: int) -> None:
        if steps != self.size:
            raise InputError(f"--parallel steps={self.size} runs one denoising step per rank, but the sampler makes {steps}; use steps={steps}")

    def __call__(self, x: torch.Tensor, steps: int, step: Step) -> torch.Tensor:
        """``x`` is this block's input to step 0 (noise) on every rank: the shape and dtype the hand-overs have."""
        self._check(steps)
        wire = wire_device(self.group, x.device)
        if self.index > 0:
            received = torch.empty(x.shape, dtype=x.dtype, device=wire)
            dist.recv(received, self.ranks[self.index - 1], group=self.group)
            x = received.to(x.device)
        x = step(self.index, x)
        if not self.final_here:
            self._send(x.to(wire).contiguous(), self.ranks[self.index + 1])
        return x

    def share(self, tensor: torch.Tensor) -> Shared:
        """The last step's ``tensor`` on every step rank: sent from there now, received elsewhere when ``get`` is called."""
        wire = wire_device(self.group, tensor.device)
        if self.final_here:
            outgoing = tensor.to(wire).contiguous()
            for rank in self.ranks[:-1]:
                self._send(outgoing, rank)
            return Shared(tensor)
        incoming = torch.empty(tensor.shape, dtype=tensor.dtype, device=wire)
        receiving = dist.irecv(incoming, self.ranks[-1], group=self.group)
        assert receiving is not None, "a step rank is in the step group"
        return Shared(incoming, receiving, tensor.device)

    def _send(self, tensor: torch.Tensor, rank: int) -> None:
        while len(self._sending) >= IN_FLIGHT:
            self._sending.popleft()[0].wait()
        sending = dist.isend(tensor, rank, group=self.group)
        assert sending is not None, "a step rank is in the step group"
        self._sending.append((sending, tensor))  # the tensor stays alive until its send is done
