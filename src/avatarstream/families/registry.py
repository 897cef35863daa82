"""Family names to lazily imported classes; packages outside this repository add theirs by entry point.

A package registers a family under the entry-point group ``avatarstream.families``::

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
from avatarstream.families.builtin import BUILTIN
from avatarstream.families.options import FamilyOptions

ENTRY_POINT_GROUP = "avatarstream.families"
#: What ``--model`` and ``avatarstream.render`` run when no model is named: the bundled one, which needs no download.
DEFAULT_MODEL = "demo"


@dataclass(frozen=True)
class Registered:
    name: str
    target: str  # "module:attribute"
    origin: str  # "avatarstream" or the distribution that registered it


@cache
def registered() -> dict[str, Registered]:
    """Every family name, the built-in ones first; an installed package cannot replace a built-in name."""
    found = {name: Registered(name, builtin.family, "avatarstream") for name, builtin in BUILTIN.items()}
    for point in entry_points(group=ENTRY_POINT_GROUP):
        if point.name not in found:
            dist = point.dist.name if point.dist is not None else "an installed package"
            found[point.name] = Registered(point.name, point.value, dist)
    return found


def names() -> list[str]:
    return list(registered())


def family_class(name: str) -> FamilyClass:
    """The class registered as ``name``, imported now; an unknown name is an InputError listing the known ones."""
    entry = _entry(name)
    cls: FamilyClass = _load(entry, entry.target)
    return cls


def describe(name: str) -> Description:
    """What the commands need of family ``name`` before it loads, without importing a built-in family's model code."""
    entry = _entry(name)
    if entry.origin == "avatarstream":
        builtin = BUILTIN[name]
        return Description(builtin.summary, builtin.weights_help, _load(entry, builtin.options), builtin.check_weights)
    cls = family_class(name)
    return Description(cls.summary, cls.weights_help, cls.Options, optional(cls, "check_weights"))


def options_class(name: str) -> type[FamilyOptions]:
    """The options dataclass of family ``name``, without loading a built-in family's models."""
    return describe(name).options


def check_weights(model: str, weights: str | os.PathLike[str] | None, options: FamilyOptions | Mapping[str, Any] | None = None) -> None:
    """Refuse what family ``model`` could not load, before its model code is imported: unknown or bad ``options``, and a
    weights folder (or a missing one) its own check (``Description.check_weights``, which its ``load`` runs too) refuses."""
    described = describe(model)
    parsed = described.options.parse(options)
    if described.check_weights is not None:
        described.check_weights(Path(weights) if weights is not None else None, parsed)


def _entry(name: str) -> Registered:
    entry = registered().get(name)
    if entry is None:
        raise InputError(f"unknown model {name!r}; choose one of: {', '.join(names())} (`avatarstream families` says what each is)")
    return entry


def _load(entry: Registered, target: str) -> Any:
    module_name, _, attribute = target.partition(":")
    try:
        return getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError) as exc:
        raise InputError(f"model {entry.name!r} is registered by {entry.origin} as {target}, which cannot be imported: {exc}") from exc


def load_family(
    model: str,
    weights: str | os.PathLike[str] | None = None,
    options: FamilyOptions | dict[str, Any] | None = None,
    *,
    device: Any = None,
    seed: int = 0,
) -> Family:
    """Load the named family with its weights (``weights``: the folder as downloaded; None: the family's default).

    ``options``: the family's own options as a mapping or its ``Options``
    dataclass; those of scope ``load`` (precision, folders named one by one)
    take effect here, the rest when a pipeline is built.
    """
    import torch

    cls = family_class(model)
    parsed = cls.Options.parse(options)
    return cls.load(Path(weights) if weights is not None else None, parsed, device=device or torch.device("cpu"), seed=seed)
