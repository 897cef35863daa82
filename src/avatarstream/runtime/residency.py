"""Where module weights live while a session runs (DESIGN.md §6).

The pipeline asks the runtime to ``acquire`` a stage's modules before it runs
and ``release`` them after, and hints which modules run next so a policy can
start moving them early. Stages never move weights themselves. This file holds
the interface and the ``resident`` policy (weights stay on the device).
"""

from __future__ import annotations

from abc import ABC, abstractmethod

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


class Runtime:
    """Applies one residency policy per module; the single door through which weights move."""

    def __init__(self, device: torch.device, policies: dict[str, str] | None = None, default: str = "resident") -> None:
        self.device = device
        self._default = self._policy(default)
        self._by_module = {name: self._policy(policy) for name, policy in (policies or {}).items()}

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
