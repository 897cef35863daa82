"""How a family declares its own options: one frozen dataclass whose fields carry help, bounds and choices.

The CLI derives its flags from it, the Python API and the server validate a
plain mapping (JSON) against it, and OpenAPI shows its schema, so the shared
layers carry a family's options as one opaque, validated mapping and never
name one. ``None`` means the family's (or its preset's) default.

A field's ``scope`` says when it takes effect: ``load`` (how the weights are
read: chosen once per process, e.g. a precision or a folder), ``build`` (how
chunks are generated; a different value needs another pipeline) or
``request`` (per render or session, e.g. which procedural identity to show).
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal

from typing_extensions import Self

from avatarstream.errors import InputError

Scope = Literal["load", "build", "request"]
Size = tuple[int, int]


def option(
    *,
    help: str,
    minimum: float | None = None,
    maximum: float | None = None,
    choices: tuple[str, ...] | None = None,
    scope: Scope = "build",
    metavar: str | None = None,
    flag: str | None = None,
) -> Any:
    """A dataclass field of a family's options (default None: the family's or preset's default)."""
    meta = {"help": help, "minimum": minimum, "maximum": maximum, "choices": choices, "scope": scope, "metavar": metavar, "flag": flag}
    return dataclasses.field(default=None, metadata=meta)


@dataclass(frozen=True)
class OptionSpec:
    """One option as the CLI, the API and the schema see it."""

    name: str
    kind: type  # int, float, str, bool, Path or Size (tuple)
    help: str
    minimum: float | None
    maximum: float | None
    choices: tuple[str, ...] | None
    scope: Scope
    metavar: str | None
    flag: str

    def check(self, value: Any) -> Any:
        """The value converted to the option's type and checked, or an InputError that names the option and its range."""
        value = self._convert(value)
        if self.kind in (int, float) and not math.isfinite(value):
            raise InputError(f"{self.flag} must be a finite number, got {value}")
        low, high = self.minimum, self.maximum
        if self.kind in (int, float) and ((low is not None and value < low) or (high is not None and value > high)):
            raise InputError(f"{self.flag} must be {_range(low, high)}, got {value}")
        if self.choices is not None and value not in self.choices:
            raise InputError(f"{self.flag} must be one of {', '.join(self.choices)}; got {value!r}")
        return value

    def _convert(self, value: Any) -> Any:
        kind = self.kind
        if kind is bool:
            if isinstance(value, bool):
                return value
        elif kind is int:
            if isinstance(value, int) and not isinstance(value, bool):
                return value
        elif kind is float:
            if isinstance(value, int | float) and not isinstance(value, bool):
                return float(value)
        elif kind is str:
            if isinstance(value, str):
                return value
        elif kind is Path:
            if isinstance(value, str | Path):
                return Path(value)
        elif kind is tuple:
            return _size(value, self.flag)
        raise InputError(f"{self.flag} must be {_KIND_WORDS[kind]}, got {value!r}")

    def to_json(self, value: Any) -> Any:
        return list(value) if isinstance(value, tuple) else str(value) if isinstance(value, Path) else value

    def json_schema(self) -> dict[str, Any]:
        schema: dict[str, Any] = {"description": self.help, **_JSON_TYPES[self.kind]}
        if self.minimum is not None:
            schema["minimum"] = self.minimum
        if self.maximum is not None:
            schema["maximum"] = self.maximum
        if self.choices is not None:
            schema["enum"] = list(self.choices)
        return schema


_KIND_WORDS: dict[type, str] = {
    bool: "true or false",
    int: "a whole number",
    float: "a number",
    str: "a string",
    Path: "a path",
    tuple: "WIDTHxHEIGHT such as 832x480 (or [width, height])",
}
_JSON_TYPES: dict[type, dict[str, Any]] = {
    bool: {"type": "boolean"},
    int: {"type": "integer"},
    float: {"type": "number"},
    str: {"type": "string"},
    Path: {"type": "string"},
    tuple: {"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 2},
}


def _range(low: float | None, high: float | None) -> str:
    if low is not None and high is not None:
        return f"between {low:g} and {high:g}"
    return f"at least {low:g}" if low is not None else f"at most {high:g}"


def _size(value: Any, flag: str) -> Size:
    """``WIDTHxHEIGHT`` text or a pair of whole numbers."""
    if isinstance(value, str):
        try:
            width, height = (int(v) for v in value.lower().split("x"))
        except ValueError:
            raise InputError(f"{flag} must be WIDTHxHEIGHT such as 832x480, got {value!r}") from None
        return width, height
    if isinstance(value, list | tuple) and len(value) == 2 and all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        return int(value[0]), int(value[1])
    raise InputError(f"{flag} must be WIDTHxHEIGHT such as 832x480 (or [width, height]), got {value!r}")


def _kind(annotation: Any) -> type:
    """The option's value type from an ``X | None`` annotation."""
    args = [a for a in typing.get_args(annotation) if a is not type(None)] or [annotation]
    base = typing.get_origin(args[0]) or args[0]
    if base not in _KIND_WORDS:
        raise TypeError(f"an option's type must be one of int, float, str, bool, Path or tuple[int, int] (a size), got {annotation}")
    return base


@dataclass(frozen=True)
class FamilyOptions:
    """Base of every family's options. Subclasses declare fields with ``option(...)`` and may set ``presets``.

    ``presets`` maps a preset's name to the settings it sets; a family with
    presets declares a ``preset`` field, and a user's own values win over it.
    """

    presets: ClassVar[Mapping[str, Mapping[str, Any]]] = {}

    def __post_init__(self) -> None:
        for spec in self.specs():
            value = getattr(self, spec.name)
            if value is not None:
                object.__setattr__(self, spec.name, spec.check(value))

    @classmethod
    def specs(cls) -> tuple[OptionSpec, ...]:
        hints = typing.get_type_hints(cls)
        return tuple(
            OptionSpec(
                f.name, _kind(hints[f.name]), f.metadata["help"], f.metadata["minimum"], f.metadata["maximum"], f.metadata["choices"],
                f.metadata["scope"], f.metadata["metavar"], f.metadata["flag"] or "--" + f.name.replace("_", "-"),
            )
            for f in dataclasses.fields(cls)
            if "help" in f.metadata
        )  # fmt: skip

    @classmethod
    def parse(cls, options: FamilyOptions | Mapping[str, Any] | None) -> Self:
        """The options from a mapping (the API's and the server's JSON) or as they are; unknown names are refused by name."""
        if options is None:
            return cls()
        if isinstance(options, cls):
            return options
        if isinstance(options, FamilyOptions) or not isinstance(options, Mapping):
            raise InputError(f"model options must be a mapping of option names to values (or {cls.__name__}), got {type(options).__name__}")
        known = {s.name: s for s in cls.specs()}
        unknown = sorted(str(k) for k in options if k not in known)
        if unknown:
            raise InputError(
                f"unknown model option{'s' if len(unknown) > 1 else ''} {', '.join(unknown)}; this model takes: {', '.join(sorted(known)) or 'none'}"
            )
        return cls(**{k: v for k, v in options.items() if v is not None})

    def given(self, *scopes: Scope) -> dict[str, Any]:
        """The options set (not None), of the given scopes (all when none is named)."""
        return {s.name: getattr(self, s.name) for s in self.specs() if getattr(self, s.name) is not None and (not scopes or s.scope in scopes)}

    def to_json(self) -> dict[str, Any]:
        return {s.name: s.to_json(getattr(self, s.name)) for s in self.specs() if getattr(self, s.name) is not None}

    def merged(self, overrides: Self) -> Self:
        """These options with every option ``overrides`` sets replaced."""
        return dataclasses.replace(self, **overrides.given())

    def with_preset(self, default: str | None = None) -> dict[str, Any]:
        """The preset's settings (``preset``, else ``default``) with the build options given on top (``preset`` itself left out;
        the field's choices have checked its name)."""
        name = getattr(self, "preset", None) or default
        given = {k: v for k, v in self.given("build").items() if k != "preset"}
        return given if name is None else {**self.presets[name], **given}

    # -- the command line ---------------------------------------------------------------------------

    @classmethod
    def flags(cls, flag_prefix: str = "") -> list[str]:
        """The command-line flags of these options (``flag_prefix``: an upscaler's ``upscale-``)."""
        return ["--" + flag_prefix + spec.flag[2:] for spec in cls.specs()]

    @classmethod
    def add_arguments(cls, group: argparse._ArgumentGroup, *, flag_prefix: str = "", dest_prefix: str = "model_option_") -> None:
        """One flag per option; values are checked later by the dataclass, so errors read the same everywhere. An upscaler's
        options come after ``--upscale-`` (``flag_prefix``), apart from the model's."""
        for spec, flag in zip(cls.specs(), cls.flags(flag_prefix), strict=True):
            dest = dest_prefix + spec.name
            if spec.kind is bool:
                group.add_argument(flag, dest=dest, action=argparse.BooleanOptionalAction, help=spec.help)
                continue
            convert: Any = {int: int, float: float, Path: Path}.get(spec.kind, str)
            metavar = spec.metavar or ("WxH" if spec.kind is tuple else None)
            group.add_argument(flag, dest=dest, type=convert, choices=spec.choices, metavar=metavar, help=spec.help)

    @classmethod
    def from_namespace(cls, args: argparse.Namespace, dest_prefix: str = "model_option_") -> Self:
        return cls(**{s.name: getattr(args, dest_prefix + s.name, None) for s in cls.specs()})

    @classmethod
    def json_schema(cls) -> dict[str, Any]:
        return {"type": "object", "additionalProperties": False, "properties": {s.name: s.json_schema() for s in cls.specs()}}


#: The ``dtype`` choices families offer, by name.
DTYPE_NAMES = ("fp32", "bf16", "fp16")


def torch_dtype(name: str | None, device: Any) -> Any:
    """A ``--dtype`` name as a torch dtype; None: bf16 on CUDA, fp32 elsewhere (torch is imported only here)."""
    import torch

    if name is None:
        return torch.bfloat16 if device.type == "cuda" else torch.float32
    return {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[name]


def refuse_scope(options: FamilyOptions, scope: Scope, why: str) -> None:
    """Raise when any option of ``scope`` is set (a session cannot change how the weights were loaded)."""
    given = options.given(scope)
    if given:
        flags = ", ".join(s.flag for s in options.specs() if s.name in given)
        raise InputError(f"{flags} {'is' if len(given) == 1 else 'are'} {why}")
