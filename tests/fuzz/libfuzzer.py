"""One target under libFuzzer (atheris) for a number of seconds: the process ``make fuzz`` starts per target.

The Python code that parses is instrumented after it is imported (the project's parsing layers and the target's own
libraries, not torch or the pipeline), so libFuzzer keeps the inputs that reach new branches of it. A breach of the
contract is recorded (findings.py) and fuzzing goes on; an input that hangs past libFuzzer's ``-timeout`` or exceeds
``-rss_limit_mb`` ends the process with libFuzzer's own artifact, and the campaign starts it again.
"""

from __future__ import annotations

import hashlib
import logging
import shutil
import sys
import types
from pathlib import Path

from fuzz import findings
from fuzz.contract import Breach, check
from fuzz.registry import load
from fuzz.target import JSON_WORDS, json_keys

#: The project's packages that parse untrusted bytes (instrumented for every target).
PROJECT = ("avatarstream.weights", "avatarstream.components", "avatarstream.families", "avatarstream.models", "avatarstream.sources", "avatarstream.serve")


def main(name: str, out: Path, seconds: int) -> None:
    import atheris

    logging.disable(logging.WARNING)  # a server target's sessions log each open and close
    target = load(name)
    corpus, found = out / "corpus" / name, out / "findings" / name
    corpus.mkdir(parents=True, exist_ok=True)
    scene = out / "scene" / name
    shutil.rmtree(scene, ignore_errors=True)
    scene.mkdir(parents=True)
    with target.prepare(scene) as (run, seeds):
        for seed in seeds:
            (corpus / f"seed-{hashlib.sha1(seed).hexdigest()[:16]}").write_bytes(seed)
        words = list(target.words) + (sorted(set(json_keys(seeds))) if target.words == JSON_WORDS else [])
        dictionary = out / "dict" / f"{name}.dict"
        dictionary.parent.mkdir(parents=True, exist_ok=True)
        dictionary.write_text("".join(f'"{_escape(w)}"\n' for w in words))
        _instrument((*PROJECT, *target.instrument))

        def one_input(data: bytes) -> None:
            try:
                check(run, data, target.bounds)
            except Breach as breach:
                findings.record(found, breach, data)

        found.mkdir(parents=True, exist_ok=True)
        hard_timeout = max(10, round(3 * target.bounds.seconds))
        argv = [
            sys.argv[0], str(corpus), f"-max_total_time={seconds}", f"-timeout={hard_timeout}", f"-rss_limit_mb={4096 + 2 * target.bounds.rss_mib}",
            f"-artifact_prefix={found}/", f"-dict={dictionary}", "-print_final_stats=1", "-print_pcs=0",
        ]  # fmt: skip
        atheris.Setup(argv, one_input)
        atheris.Fuzz()


def _instrument(prefixes: tuple[str, ...]) -> None:
    """Add atheris's coverage callbacks to every function already imported from the modules under ``prefixes``."""
    import gc

    import atheris

    def wanted(module: str) -> bool:
        return any(module == p or module.startswith(p + ".") for p in prefixes)

    for obj in gc.get_objects():
        if isinstance(obj, types.FunctionType) and wanted(getattr(obj, "__module__", None) or ""):
            try:
                atheris.instrument_func(obj)
            except Exception as err:  # noqa: BLE001 -- a function atheris cannot rewrite runs as it is
                print(f"not instrumented: {obj.__module__}.{obj.__qualname__}: {err}", file=sys.stderr)


def _escape(word: str) -> str:
    """A dictionary entry as libFuzzer reads it: printable ASCII as is, anything else as \\xNN."""
    return "".join(c if 32 <= ord(c) < 127 and c not in '"\\' else "".join(f"\\x{b:02x}" for b in c.encode("latin-1", "replace")) for c in word)
