"""Family names to lazily imported classes; packages outside this repository add theirs by entry point.

A package registers a family under the entry-point group ``avatarstream.families``::

    [project.entry-points."avatarstream.families"]
    colourbars = "my_package.family:ColourBarsFamily"

Nothing is imported until a family is asked for by name, so listing the names
(``--model`` choices, ``--help``) costs nothing. A family's options are read
without loading its models (the CLI builds its flags from them): the built-in
families keep their options in modules of their own, and a plug-in's options
are its class's ``Options`` (keep the module that defines the class light for a
fast ``--help``).
"""

from __future__ import annotations

import importlib
import os
from dataclasses import dataclass
from functools import cache
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

from avatarstream.errors import InputError
from avatarstream.families.base import Family, FamilyClass
from avatarstream.families.options import FamilyOptions

ENTRY_POINT_GROUP = "avatarstream.families"
#: What ``--model`` and ``avatarstream.render`` run when no model is named: the bundled one, which needs no download.
DEFAULT_MODEL = "demo"

#: The families this package ships: name -> "module:Class".
BUILTIN = {
    "demo": "avatarstream.families.demo:DemoFamily",
    "demo-tiny": "avatarstream.families.demo:DemoTinyFamily",
    "infinitetalk": "avatarstream.families.infinitetalk.family:InfiniteTalkFamily",
    "liveavatar": "avatarstream.families.liveavatar.family:LiveAvatarFamily",
}
#: Their options, in modules that load no model code: name -> "module:Class".
BUILTIN_OPTIONS = {
    "demo": "avatarstream.families.demo_options:DemoOptions",
    "demo-tiny": "avatarstream.families.demo_options:DemoOptions",
    "infinitetalk": "avatarstream.families.infinitetalk.options:InfiniteTalkOptions",
    "liveavatar": "avatarstream.families.liveavatar.options:LiveAvatarOptions",
}


@dataclass(frozen=True)
class Registered:
    name: str
    target: str  # "module:attribute"
    origin: str  # "avatarstream" or the distribution that registered it


@cache
def registered() -> dict[str, Registered]:
    """Every family name, the built-in ones first; an installed package cannot replace a built-in name."""
    found = {name: Registered(name, target, "avatarstream") for name, target in BUILTIN.items()}
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


def options_class(name: str) -> type[FamilyOptions]:
    """The options dataclass of family ``name``, without loading a built-in family's models."""
    entry = _entry(name)
    if name in BUILTIN_OPTIONS and entry.origin == "avatarstream":
        options: type[FamilyOptions] = _load(entry, BUILTIN_OPTIONS[name])
        return options
    return family_class(name).Options


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
