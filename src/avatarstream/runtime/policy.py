"""The residency interface every policy implements, and the simplest policy (``resident``).

A ``Residency`` is one module's weights under one policy. The runtime calls
``prefetch`` when the module will run soon, ``acquire`` right before a stage
calls the module, ``release`` when the stage is done with it, and ``close``
when another runtime takes the module over (hooks go, device buffers of the
policy go; resident weights may stay where they are, any policy can take them
from there).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar

from avatarstream.errors import InputError
from avatarstream.runtime.device_ops import DeviceOps
from avatarstream.runtime.module import Module
from avatarstream.runtime.parallel.groups import ParallelGroups


class Residency(ABC):
    """How one module's weights move between host and device."""

    name: ClassVar[str]
    sequential_only: ClassVar[bool] = False
    """True when the module's stages must run in one sequence, never overlapped with other stages."""

    def __init__(self, module: Module, ops: DeviceOps) -> None:
        self.module = module
        self.ops = ops

    @classmethod
    def create(cls, module: Module, ops: DeviceOps, parallel: ParallelGroups, **options: Any) -> Residency:
        """The policy for ``module``; ``parallel``: the process groups of the run (a policy that spans processes uses them)."""
        return cls(module, ops, **options)

    @classmethod
    def options(cls, text: str) -> dict[str, Any]:
        """Parse the part after ``policy:`` in a config (e.g. the ``2`` of ``streamed:2``) into keyword arguments."""
        if text:
            raise InputError(f"residency policy {cls.name!r} takes no option, got {cls.name}:{text}")
        return {}

    @abstractmethod
    def acquire(self) -> None:
        """Make the weights usable on the device; the stage calls the network next."""

    def release(self) -> None:
        """The stage is done with the module for now."""

    def prefetch(self) -> None:
        """The module runs soon: start moving it if that helps."""

    @abstractmethod
    def device_bytes(self) -> int:
        """Bytes of this module's weights the policy holds on the device right now."""

    def close(self) -> None:
        """Hand the module back in a plain state: no hooks, no device buffers of this policy."""


class Resident(Residency):
    """Weights move to the device once and stay."""

    name = "resident"

    def __init__(self, module: Module, ops: DeviceOps) -> None:
        super().__init__(module, ops)
        self._on_device = 0  # bytes moved; counted once, not on every switch

    def acquire(self) -> None:
        if not self._on_device:
            self.module.network.to(self.ops.device)
            self._on_device = self.module.size_bytes

    def device_bytes(self) -> int:
        return self._on_device
