"""Where module weights live while a session runs (DESIGN.md §6).

The pipeline asks the runtime to ``acquire`` a stage's modules before it runs
and ``release`` them after, and hints which modules run next so a policy can
start moving them early. Stages never move weights themselves. This file holds
the interface and the ``resident`` policy (weights stay on the device).
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections import defaultdict
from dataclasses import dataclass

import torch

from avatarstream.errors import InputError
from avatarstream.pipeline.module import Module


class ResidencyPolicy(ABC):
    """How one module's weights move between host and device."""

    @abstractmethod
    def acquire(self, module: Module, device: torch.device) -> None:
        """Make the module's weights usable on ``device``."""

    def release(self, module: Module) -> None:
        """The stage is done with the module for now."""

    def prefetch(self, module: Module, device: torch.device) -> None:
        """The module runs soon: start moving it if that helps."""


class Resident(ResidencyPolicy):
    """Weights move to the device once and stay."""

    def acquire(self, module: Module, device: torch.device) -> None:
        first = next(module.network.parameters(), None)
        if first is not None and first.device != device:
            module.network.to(device)


POLICIES: dict[str, type[ResidencyPolicy]] = {"resident": Resident}


@dataclass
class SwitchStat:
    """Exposed time of one kind of stage switch (from the end of one stage's compute to the start of the next)."""

    count: int = 0
    total_s: float = 0.0
    max_s: float = 0.0

    def add(self, seconds: float) -> None:
        self.count += 1
        self.total_s += seconds
        self.max_s = max(self.max_s, seconds)


class Runtime:
    """Applies one residency policy per module; the single door through which weights move.

    The pipeline calls ``stage_starts`` before a stage computes (with the
    modules of the stage that runs after it, so policies can move them early)
    and ``stage_ends`` after. The time the compute thread spends in the
    previous stage's release plus this stage's acquire and prefetch is the
    exposed switch time, kept per kind of switch (pipeline bookkeeping and
    the consumer of the frames are not part of it).
    """

    def __init__(self, device: torch.device, policies: dict[str, str] | None = None, default: str = "resident") -> None:
        self.device = device
        self._default = self._policy(default)
        self._by_module = {name: self._policy(policy) for name, policy in (policies or {}).items()}
        self.switches: dict[str, SwitchStat] = defaultdict(SwitchStat)
        self._last_end: tuple[str, float] | None = None

    @staticmethod
    def _policy(name: str) -> ResidencyPolicy:
        if name not in POLICIES:
            raise InputError(f"unknown residency policy {name!r}; choose one of: {', '.join(POLICIES)}")
        return POLICIES[name]()

    def policy_for(self, module: Module) -> ResidencyPolicy:
        return self._by_module.get(module.name, self._default)

    def acquire(self, modules: tuple[Module, ...]) -> None:
        for module in modules:
            self.policy_for(module).acquire(module, self.device)

    def release(self, modules: tuple[Module, ...]) -> None:
        for module in modules:
            self.policy_for(module).release(module)

    def prefetch(self, modules: tuple[Module, ...]) -> None:
        for module in modules:
            self.policy_for(module).prefetch(module, self.device)

    def stage_starts(self, stage: str, modules: tuple[Module, ...], upcoming: tuple[Module, ...]) -> None:
        started = time.perf_counter()
        self.acquire(modules)
        self.prefetch(upcoming)
        if self._last_end is not None:
            previous, release_s = self._last_end
            self.switches[f"{previous}->{stage}"].add(release_s + time.perf_counter() - started)

    def stage_ends(self, stage: str, modules: tuple[Module, ...]) -> None:
        started = time.perf_counter()
        self.release(modules)
        self._last_end = (stage, time.perf_counter() - started)

    def switch_summary(self) -> dict[str, dict[str, float]]:
        """Per kind of switch: count, mean and max exposed milliseconds."""
        return {
            name: {"count": st.count, "mean_ms": 1e3 * st.total_s / st.count, "max_ms": 1e3 * st.max_s}
            for name, st in sorted(self.switches.items())
        }
