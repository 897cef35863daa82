"""Typed, range-checked reads of one parsed JSON config from a weights folder.

A weights folder is untrusted: its ``config.json`` may hold a string, a list, a float, ``1e999`` or a billion where a
small count belongs. Each value is checked for type and range before any network is built, so a damaged or hostile
config ends in one ``InputError`` naming the file, the key and the range, never a ``ZeroDivisionError`` or an
allocation sized by the lie. The ranges are generous (several times the largest published model) and exist to keep
what is built bounded; :mod:`avatarstream.weights.memory_check` then refuses a model the machine cannot hold.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from avatarstream.errors import InputError

#: The widest layer any config may ask for (the 14B Wan DiT's FFN is 13824 wide).
MAX_WIDTH = 1 << 17
#: The most layers (blocks) a network may have (the 14B Wan DiT has 40).
MAX_LAYERS = 1024
#: The most attention heads.
MAX_HEADS = 1024

_MISSING = object()


def read_json_object(path: Path, expected: str) -> dict[str, Any]:
    """``path`` parsed as a JSON object; anything else is one InputError that says what was ``expected``."""
    try:
        raw = json.loads(path.read_text())
    except (OSError, ValueError) as exc:  # json.JSONDecodeError and UnicodeDecodeError are ValueErrors
        raise InputError(f"cannot read {path}: {exc}; {expected}") from exc
    if not isinstance(raw, dict):
        raise InputError(f"{path} holds a JSON {type(raw).__name__}, not an object; {expected}")
    return raw


class ConfigValues:
    """The values of one config object, read with a type and a range each."""

    def __init__(self, raw: dict[str, Any], path: Path, expected: str) -> None:
        self.raw = raw
        self.path = path
        self.expected = expected

    def _get(self, key: str, default: Any) -> Any:
        if key in self.raw:
            return self.raw[key]
        if default is _MISSING:
            raise InputError(f"{self.path} has no {key!r}; {self.expected}")
        return default

    def _refuse(self, key: str, value: Any, wanted: str) -> InputError:
        return InputError(f"invalid {self.path}: {key} is {_show(value)}, expected {wanted}; {self.expected}")

    def count(self, key: str, default: Any = _MISSING, *, low: int = 1, high: int = MAX_WIDTH) -> int:
        """A whole number in ``low..high`` (a JSON integer; never a bool, a float or a string)."""
        value = self._get(key, default)
        if not _is_int(value) or not low <= value <= high:
            raise self._refuse(key, value, f"a whole number in {low}..{high}")
        return int(value)

    def number(self, key: str, default: Any = _MISSING, *, low: float, high: float) -> float:
        """A finite number in ``low..high``."""
        value = self._get(key, default)
        if not _is_number(value) or not low <= value <= high:
            raise self._refuse(key, value, f"a finite number in {low:g}..{high:g}")
        return float(value)

    def counts(self, key: str, default: Any = _MISSING, *, length: range, low: int = 1, high: int = MAX_WIDTH) -> tuple[int, ...]:
        """A list of whole numbers in ``low..high`` whose length lies in ``length``."""
        value = self._get(key, default)
        if not isinstance(value, (list, tuple)) or len(value) not in length or not all(_is_int(v) and low <= v <= high for v in value):
            raise self._refuse(key, value, f"a list of {_lengths(length)} whole numbers in {low}..{high}")
        return tuple(int(v) for v in value)

    def numbers(self, key: str, default: Any = _MISSING, *, length: int, low: float, high: float) -> tuple[float, ...]:
        """A list of exactly ``length`` finite numbers in ``low..high``."""
        value = self._get(key, default)
        if not isinstance(value, (list, tuple)) or len(value) != length or not all(_is_number(v) and low <= v <= high for v in value):
            raise self._refuse(key, value, f"a list of {length} finite numbers in {low:g}..{high:g}")
        return tuple(float(v) for v in value)

    def flags(self, key: str, default: Any = _MISSING, *, length: int) -> tuple[bool, ...]:
        """A list of exactly ``length`` booleans."""
        value = self._get(key, default)
        if not isinstance(value, (list, tuple)) or len(value) != length or not all(isinstance(v, bool) for v in value):
            raise self._refuse(key, value, f"a list of {length} true/false values")
        return tuple(value)

    def divides(self, key: str, whole: int, part: int, part_key: str) -> None:
        """``part`` (the value of ``part_key``) must divide ``whole`` (the value of ``key``)."""
        if whole % part:
            raise InputError(f"invalid {self.path}: {key} {whole} is not a multiple of {part_key} {part}; {self.expected}")


@contextmanager
def built_from(path: Path, expected: str) -> Iterator[None]:
    """Building the network a checked config describes: what a library's constructor still refuses (a dropout of 5, an
    unknown activation, a negative width) is the config's fault too, one InputError naming it."""
    try:
        yield
    except (ValueError, TypeError, KeyError, RuntimeError, AssertionError, ZeroDivisionError) as exc:
        raise InputError(f"invalid {path}: the network it describes cannot be built ({type(exc).__name__}: {one_line(exc)}); {expected}") from exc


def one_line(exc: BaseException) -> str:
    """An exception's message on one line (libraries' often span several)."""
    return " ".join(str(exc).split()) or type(exc).__name__


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _lengths(length: range) -> str:
    return str(length.start) if len(length) == 1 else f"{length.start}..{length.stop - 1}"


def _show(value: Any) -> str:
    """A value as a message can show it: short, on one line."""
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
