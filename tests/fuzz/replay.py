"""Saved inputs run again, outside libFuzzer: one file at a time to see what it does (a finding, a corpus entry), or a
whole corpus under coverage.py to measure what the fuzzing reached in the project's parsing modules."""

from __future__ import annotations

import importlib.util
import json
import logging
import shutil
import tempfile
import traceback
from pathlib import Path
from typing import Any

from fuzz.contract import Breach, check
from fuzz.registry import load


def replay(name: str, files: list[Path]) -> int:
    """Feed each file to target ``name`` and say what happened; the exit status is 1 when any breaks the contract."""
    target = load(name)
    broken = 0
    with tempfile.TemporaryDirectory(prefix="fuzz-replay-") as folder, target.prepare(Path(folder)) as (run, _):
        for file in files:
            try:
                message = check(run, file.read_bytes(), target.bounds)
                print(f"{file}: " + ("accepted" if message is None else f"refused: {message}"))
            except Breach as breach:
                broken += 1
                print(f"{file}: BREACH {breach}")
                if breach.__cause__ is not None:
                    traceback.print_exception(breach.__cause__)
    return 1 if broken else 0


def cover(name: str, corpus: Path, report: Path, seeds_only: bool = False) -> dict[str, Any]:
    """Lines and branches of the target's modules that replaying ``corpus`` (or only its ``seed-*`` files) runs; written to
    ``report`` as coverage.py's JSON and returned as totals. Call in a fresh process: the modules must be imported under
    coverage."""
    import coverage

    logging.disable(logging.WARNING)
    files = sorted(corpus.glob("seed-*" if seeds_only else "*"))
    cov = coverage.Coverage(branch=True, data_file=None, source_pkgs=["avatarstream"])
    cov.start()
    target = load(name)
    sources = [importlib.util.find_spec(m).origin for m in target.modules]  # type: ignore[union-attr]
    scene = Path(tempfile.mkdtemp(prefix="fuzz-cover-"))
    try:
        with target.prepare(scene) as (run, _):
            for file in files:
                try:
                    check(run, file.read_bytes(), target.bounds)
                except Breach:
                    pass
    finally:
        cov.stop()
        shutil.rmtree(scene, ignore_errors=True)
    report.parent.mkdir(parents=True, exist_ok=True)
    cov.json_report(morfs=sources, outfile=str(report))
    totals = json.loads(report.read_text())["totals"]
    return {
        "inputs": len(files),
        "lines": [totals["covered_lines"], totals["num_statements"]],
        "branches": [totals["covered_branches"], totals["num_branches"]],
    }
