"""Family and upscaler names to lazily imported classes; packages outside this repository add theirs by entry point.

A package registers a family under the entry-point group ``avatarstream.families``, an upscaler (a super-resolution
stage after any family, ``families/upscaler.py``) under ``avatarstream.upscalers``::

    [project.entry-points."avatarstream.families"]
    colourbars = "my_package.family:ColourBarsFamily"

Nothing is imported until a family is asked for by name, so listing the names
(``--model`` choices, ``--help``) costs nothing. What the commands need before
a model loads (``describe``: its summary, weights help, options and weights
check) comes without its model code: the built-in families describe themselves
in ``families/builtin.py``, and a plug-in through its class (keep the module
that defines the class light: torch and the networks imported in ``load``).
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

from avatarstream.errors import InputError
from avatarstream.families.base import Description, Family, FamilyClass, optional
from avatarstream.families.builtin import BUILTIN, Builtin
from avatarstream.families.builtin_upscalers import BUILTIN_UPSCALERS
from avatarstream.families.options import FamilyOptions
from avatarstream.families.upscaler import Cascade, UpscalerClass

#: What ``--model`` and ``avatarstream.render`` run when no model is named: the bundled one, which needs no download.
DEFAULT_MODEL = "demo"


@dataclass(frozen=True, eq=False)  # hashed by identity (the registry caches per kind)
class Kind:
    """A kind of plug-in: its entry-point group, the ones avatarstream ships, and what a user calls one (in messages)."""

    group: str
    builtin: Mapping[str, Builtin]
    word: str  # "model" or "upscaler"
    command: str  # the listing that says what each is


FAMILIES = Kind("avatarstream.families", BUILTIN, "model", "`avatarstream families`")
UPSCALERS = Kind("avatarstream.upscalers", BUILTIN_UPSCALERS, "upscaler", "`avatarstream families`")
ENTRY_POINT_GROUP = FAMILIES.group


@dataclass(frozen=True)
class Registered:
    name: str
    target: str  # "module:attribute"
    origin: str  # "avatarstream" or the distribution that registered it
    kind: Kind = FAMILIES


@cache
def registered(kind: Kind = FAMILIES) -> dict[str, Registered]:
    """Every name of ``kind``, the built-in ones first; an installed package cannot replace a built-in name."""
    found = {name: Registered(name, builtin.family, "avatarstream", kind) for name, builtin in kind.builtin.items()}
    for point in entry_points(group=kind.group):
        if point.name not in found:
            dist = point.dist.name if point.dist is not None else "an installed package"
            found[point.name] = Registered(point.name, point.value, dist, kind)
    return found


def names(kind: Kind = FAMILIES) -> list[str]:
    return list(registered(kind))


def family_class(name: str, kind: Kind = FAMILIES) -> FamilyClass:
    """The class registered as ``name``, imported now; an unknown name is an InputError listing the known ones."""
    entry = _entry(name, kind)
    cls: FamilyClass = _load(entry, entry.target)
    return cls


def describe(name: str, kind: Kind = FAMILIES) -> Description:
    """What the commands need of family (or upscaler) ``name`` before it loads, without importing a built-in one's model code."""
    entry = _entry(name, kind)
    if entry.origin == "avatarstream":
        builtin = kind.builtin[name]
        return Description(builtin.summary, builtin.weights_help, _load(entry, builtin.options), builtin.check_weights)
    cls = family_class(name, kind)
    return Description(cls.summary, cls.weights_help, cls.Options, optional(cls, "check_weights"))


def options_class(name: str, kind: Kind = FAMILIES) -> type[FamilyOptions]:
    """The options dataclass of family (or upscaler) ``name``, without loading a built-in one's models."""
    return describe(name, kind).options


def check_weights(model: str, weights: str | os.PathLike[str] | None, options: FamilyOptions | Mapping[str, Any] | None = None, kind: Kind = FAMILIES) -> None:
    """Refuse what family (or upscaler) ``model`` could not load, before its model code is imported: unknown or bad ``options``,
    and a weights folder (or a missing one) its own check (``Description.check_weights``, which its ``load`` runs too) refuses."""
    described = describe(model, kind)
    parsed = described.options.parse(options)
    if described.check_weights is not None:
        described.check_weights(Path(weights) if weights is not None else None, parsed)


def _entry(name: str, kind: Kind) -> Registered:
    entry = registered(kind).get(name)
    if entry is None:
        raise InputError(f"unknown {kind.word} {name!r}; choose one of: {', '.join(names(kind))} ({kind.command} says what each is)")
    return entry


def _load(entry: Registered, target: str) -> Any:
    module_name, _, attribute = target.partition(":")
    try:
        return getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError) as exc:
        raise InputError(f"{entry.kind.word} {entry.name!r} is registered by {entry.origin} as {target}, which cannot be imported: {exc}") from exc


def load_family(
    model: str,
    weights: str | os.PathLike[str] | None = None,
    options: FamilyOptions | dict[str, Any] | None = None,
    *,
    device: Any = None,
    seed: int = 0,
    upscale: str | None = None,
    upscale_weights: str | os.PathLike[str] | None = None,
    upscale_options: FamilyOptions | Mapping[str, Any] | None = None,
) -> Family:
    """Load the named family with its weights (``weights``: the folder as downloaded; None: the family's default).

    ``options``: the family's own options as a mapping or its ``Options``
    dataclass; those of scope ``load`` (precision, folders named one by one)
    take effect here, the rest when a pipeline is built. ``upscale``: an
    upscaler's name (``avatarstream families`` lists them) to run on the
    family's frames, loaded from ``upscale_weights`` with ``upscale_options``:
    the family returned is then the cascade of both.
    """
    import torch

    device = device or torch.device("cpu")
    cls = family_class(model)
    parsed = cls.Options.parse(options)
    family = cls.load(Path(weights) if weights is not None else None, parsed, device=device, seed=seed)
    return Upscale(upscale, upscale_weights, upscale_options).load(family, device=device, seed=seed)


@dataclass(frozen=True)
class Upscale:
    """Which upscaler runs after the family (``name`` None: none), from which weights, with which of its options."""

    name: str | None = None
    weights: str | os.PathLike[str] | None = None
    options: FamilyOptions | Mapping[str, Any] | None = None

    def check(self) -> None:
        """Refuse an unknown upscaler, bad options or a weights folder it could not load, before its model code is imported."""
        if self.name is None:
            if self.weights is not None or self.options:
                raise InputError("upscale weights or options were given without an upscaler: name one with --upscale NAME (upscale=NAME in Python)")
            return
        check_weights(self.name, self.weights, self.options, UPSCALERS)

    def options_json(self) -> dict[str, Any]:
        """The upscaler's options as JSON (what a server's settings carry); none without an upscaler."""
        return {} if self.name is None else options_class(self.name, UPSCALERS).parse(self.options).to_json()

    def load(self, family: Family, *, device: Any, seed: int = 0) -> Family:
        """``family`` followed by this upscaler, loaded now (``family`` itself when no upscaler is named): a ``Cascade``."""
        self.check()
        if self.name is None:
            return family
        cls: UpscalerClass = family_class(self.name, UPSCALERS)  # type: ignore[assignment]
        parsed = cls.Options.parse(self.options)
        loaded = cls.load(Path(self.weights) if self.weights is not None else None, parsed, device=device, seed=seed)
        return Cascade(family, loaded, parsed)


NO_UPSCALE = Upscale()
