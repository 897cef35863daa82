"""Residency configuration: the policy registry and the ``module=policy[:option]`` syntax.

A config maps module names to policy texts (``{"a2v_dit": "streamed:2",
"default": "offloaded"}``); ``parse_residency`` reads the command-line form
``a2v_dit=streamed:2,sr_dit=offloaded,default=resident``. Every mistake is an
``InputError`` that names the bad part and the valid choices.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from avatarstream.errors import InputError
from avatarstream.runtime.device_ops import DeviceOps
from avatarstream.runtime.module import Module
from avatarstream.runtime.offload import Offloaded
from avatarstream.runtime.parallel.groups import ParallelGroups
from avatarstream.runtime.policy import Residency, Resident
from avatarstream.runtime.sharding import Sharded
from avatarstream.runtime.streamed import Streamed

POLICIES: dict[str, type[Residency]] = {cls.name: cls for cls in (Resident, Offloaded, Streamed, Sharded)}
DEFAULT_KEY = "default"
"""Config key for the policy of every module not named."""


@dataclass(frozen=True)
class PolicySpec:
    """A parsed ``policy[:option]`` text, ready to build one module's residency."""

    text: str
    policy: type[Residency]
    options: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def parse(cls, text: str, module: str = DEFAULT_KEY) -> PolicySpec:
        name, _, option = text.strip().partition(":")
        if name not in POLICIES:
            raise InputError(f"unknown residency policy {name!r} for {module!r}; choose one of: {', '.join(POLICIES)}")
        try:
            return cls(text.strip(), POLICIES[name], POLICIES[name].options(option.strip()))
        except InputError as exc:
            raise InputError(f"residency for {module!r}: {exc}") from None

    def build(self, module: Module, ops: DeviceOps, parallel: ParallelGroups) -> Residency:
        return self.policy.create(module, ops, parallel, **self.options)


def _is_policy(text: str) -> bool:
    return text.partition(":")[0] in POLICIES


def parse_residency(text: str, modules: Iterable[str]) -> dict[str, str]:
    """``a2v_dit=streamed:2,sr_dit=offloaded,default=resident`` -> ``{"a2v_dit": "streamed:2", ...}``.

    ``modules`` are the names the model has; ``default`` sets the policy of
    the others, and a policy alone (``offloaded``) is the default of every
    module. The result is what ``Runtime`` (and ``family.build(residency=...)``) takes.
    """
    known = list(modules)
    config: dict[str, str] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        module, sep, policy = (s.strip() for s in item.partition("="))
        if not sep and _is_policy(module):
            module, sep, policy = DEFAULT_KEY, "=", module
        if not sep or not module or not policy:
            raise InputError(f"bad residency entry {item!r}; write module=policy, e.g. a2v_dit=streamed:2,default=offloaded")
        if module in config:
            raise InputError(f"residency for {module!r} is given twice")
        if module != DEFAULT_KEY and module not in known:
            raise InputError(f"unknown module {module!r} in residency config; this model has: {', '.join(known)} (or {DEFAULT_KEY})")
        PolicySpec.parse(policy, module)
        config[module] = policy
    return config
