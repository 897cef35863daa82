"""What a fuzz target is: a parser of untrusted bytes, the folder it needs, seed inputs, and the bounds of its contract.

The bytes an input holds are the file (or the request body, or the socket's messages) as the parser receives it, so a
finding is replayed by handing the saved file to the program that failed (docs/fuzzing.md).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fuzz.contract import DEFAULT_BOUNDS, Bounds, Run

#: Tokens a JSON parser's input is made of, and the values a hostile config tries (libFuzzer splices them in).
JSON_WORDS = (
    '"',
    "{",
    "}",
    "[",
    "]",
    ":",
    ",",
    "null",
    "true",
    "false",
    "-1",
    "0",
    "1e999",
    "-1e999",
    "NaN",
    "Infinity",
    "1000000000",
    "0.5",
    '""',
    "[]",
    "{}",
)


@dataclass(frozen=True)
class Target:
    """``prepare(folder)`` lays out what the parser needs under ``folder`` (a server, for some) and yields the function
    that feeds it one input and the seed inputs: good inputs, then what fuzzing found (each fixed, and each held to the
    contract on every CI run, tests/fuzz/test_fuzz_slice.py). ``modules``: the project's files that parse (coverage is reported over them);
    ``instrument``: other modules whose Python code should steer the fuzzer too (Pillow's plugins, the multipart parser)."""

    name: str
    prepare: Callable[[Path], AbstractContextManager[tuple[Run, list[bytes]]]]
    modules: tuple[str, ...]
    instrument: tuple[str, ...] = ()
    words: tuple[str, ...] = ()
    bounds: Bounds = DEFAULT_BOUNDS


def file_target(
    name: str,
    scene: Callable[[Path], Path],
    relative: str,
    load: Callable[[Path], Any],
    modules: tuple[str, ...],
    *,
    words: tuple[str, ...] = JSON_WORDS,
    bounds: Bounds = DEFAULT_BOUNDS,
    found: tuple[dict[str, Any], ...] = (),
) -> Target:
    """A target that writes each input over ``scene/relative`` and runs ``load(scene)``. The file as the scene has it is
    the seed; ``found``: what fuzzing found, as keys that replace the seed's (a JSON object's)."""

    @contextmanager
    def prepare(folder: Path) -> Iterator[tuple[Run, list[bytes]]]:
        root = scene(folder)
        path = root / relative
        seed = path.read_bytes()

        def run(data: bytes) -> None:
            path.write_bytes(data)
            load(root)

        yield run, [seed, *(json.dumps({**json.loads(seed), **keys}, allow_nan=True).encode() for keys in found)]

    return Target(name, prepare, modules, words=words, bounds=bounds)


def json_keys(seeds: list[bytes]) -> Iterator[str]:
    """Every object key of the seeds that are JSON, quoted as it appears in a file (for the libFuzzer dictionary)."""
    for seed in seeds:
        try:
            yield from _keys(json.loads(seed))
        except ValueError:
            continue


def _keys(value: Any) -> Iterator[str]:
    if isinstance(value, dict):
        for key, item in value.items():
            yield json.dumps(key)
            yield from _keys(item)
    elif isinstance(value, list):
        for item in value:
            yield from _keys(item)
