"""``make fuzz``: every target for an equal share of the budget, one libFuzzer process at a time (started again after an
input it had to kill), then the coverage its corpus reaches; the API's stateful run takes one more share. What it
found, ran and reached is written to ``OUT/report.json`` and printed."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from fuzz import findings
from fuzz.registry import WHERE

#: A libFuzzer process needs a few seconds to start (torch, the scene); a share left shorter than this is not started.
MIN_RUN_S = 10


def campaign(names: list[str], seconds: float, out: Path, api: bool) -> dict[str, Any]:
    share = seconds / (len(names) + api)
    report: dict[str, Any] = {"seconds_per_target": round(share), "targets": {}}
    for name in names:
        started = time.time()
        report["targets"][name] = entry = _fuzz(name, share, out)
        for kind in ("seeds", "corpus"):
            entry[f"coverage_{kind}"] = _cover(name, out, seeds_only=kind == "seeds")
        entry["findings"] = [p.name for p in findings.inputs(out / "findings" / name, since=started)]
        _print(name, entry)
        _write(out, report)
    if api:
        report["api"] = _api(share, out)
        print(f"api-stateful: {json.dumps(report['api'])}", flush=True)
        _write(out, report)
    return report


def _fuzz(name: str, seconds: float, out: Path) -> dict[str, Any]:
    """libFuzzer on ``name`` until ``seconds`` are spent; its executions and restarts (each an input it had to kill)."""
    logs = out / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    deadline, execs, runs = time.monotonic() + seconds, 0, 0
    while (left := deadline - time.monotonic()) >= MIN_RUN_S:
        log = logs / f"{name}-{runs}.log"
        with log.open("w") as sink:
            subprocess.run([sys.executable, "-m", "fuzz", "child", name, "--seconds", str(int(left)), "--out", str(out)], stdout=sink, stderr=sink, check=False)
        execs += _executions(log.read_text(errors="replace"))
        runs += 1
    return {"seconds": round(seconds), "executions": execs, "processes": runs}


def _executions(log: str) -> int:
    """Inputs run, from libFuzzer's final statistics or, after a kill, its last progress line."""
    final = re.findall(r"stat::number_of_executed_units: (\d+)", log)
    if final:
        return int(final[-1])
    progress = re.findall(r"^#(\d+)\s", log, re.MULTILINE)
    return int(progress[-1]) if progress else 0


def _cover(name: str, out: Path, seeds_only: bool) -> dict[str, Any]:
    """Coverage of the corpus (or its seeds alone), measured in a fresh process so the modules import under coverage."""
    kind = "seeds" if seeds_only else "corpus"
    report = out / "coverage" / f"{name}-{kind}.json"
    command = [sys.executable, "-m", "fuzz", "cover", name, "--out", str(out), "--report", str(report)] + (["--seeds-only"] if seeds_only else [])
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    lines = done.stdout.strip().splitlines()
    return json.loads(lines[-1]) if done.returncode == 0 and lines else {"error": done.stderr[-500:]}


def _api(seconds: float, out: Path) -> dict[str, Any]:
    done = subprocess.run([sys.executable, "-m", "fuzz", "api", "--seconds", str(int(seconds)), "--out", str(out)], capture_output=True, text=True, check=False)
    lines = done.stdout.strip().splitlines()
    return json.loads(lines[-1]) if lines and lines[-1].startswith("{") else {"error": (done.stdout + done.stderr)[-1000:]}


def _print(name: str, entry: dict[str, Any]) -> None:
    corpus = entry["coverage_corpus"]
    seeds = entry["coverage_seeds"]
    if "lines" in corpus and "lines" in seeds:
        reached = f"lines {seeds['lines'][0]}->{corpus['lines'][0]}/{corpus['lines'][1]}, branches {seeds['branches'][0]}->{corpus['branches'][0]}/{corpus['branches'][1]}"
    else:
        reached = f"coverage failed: {corpus.get('error') or seeds.get('error')}"
    print(
        f"{name}: {entry['executions']} executions in {entry['seconds']} s ({entry['processes']} processes); {reached}; findings: {entry['findings'] or 'none'}",
        flush=True,
    )


def _write(out: Path, report: dict[str, Any]) -> None:
    (out / "report.json").write_text(json.dumps(report, indent=1))


def all_targets() -> list[str]:
    return list(WHERE)
