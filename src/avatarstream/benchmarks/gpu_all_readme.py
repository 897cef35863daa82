"""The README of a ``bench/gpu_all.sh`` run: one row per part (status, time against its budget, headline), then the
scenarios of every family GPU benchmark it ran side by side (eager and compiled).

A part whose folder holds ``<model>-gpu.json`` for a registered model ran that family's GPU benchmark
(``families/<name>/gpu_bench.py``, on ``benchmarks/gpu_run.py``); its headline and its rows of the table come from
that file. The streams and runtime parts have headlines of their own; any other part lists its files.

    python -m avatarstream.benchmarks.gpu_all_readme RESULTS_DIR     # reads RESULTS_DIR/parts.tsv and each part's JSON
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from avatarstream.families.registry import names

PARTS_FILE = "parts.tsv"


def _json(path: Path) -> dict[str, Any] | None:
    try:
        found: dict[str, Any] = json.loads(path.read_text())
        return found
    except (OSError, ValueError):
        return None


def _streams(folder: Path) -> str:
    result = _json(folder / "streams" / "streams.json")
    if result is None:
        return ""
    runs = result.get("runs", {})
    parts = [f"overlapped frames identical to inline: {result.get('identical_frames')} (max diff {result.get('max_abs_frame_diff')})"]
    for name, run in runs.items():
        if "error" in run:
            parts.append(f"{name}: {run['error']}")
        else:
            top = next(iter(run["host_waits_by_line"]), "none")
            parts.append(
                f"{name}: x{run['realtime_factor']:.2f} real time, device syncs/chunk {run['device_syncs_per_chunk']:.2f}, "
                f"host syncs/chunk {run['host_syncs_per_chunk']:.2f}, host waits/chunk {run['host_waits_per_chunk']:.2f} (most at {top})"
            )
    return "; ".join(parts)


def _family_result(part: Path) -> dict[str, Any] | None:
    """The results of the GPU benchmark a part ran: ``<model>-gpu.json`` in its folder for a registered model, or a
    cascade's (``cascade-gpu.json``: a model, then an upscaler)."""
    return next((found for name in [*names(), "cascade"] if (found := _json(part / f"{name}-gpu.json")) is not None), None)


def _family_gpu(result: dict[str, Any]) -> str:
    ok = [r for r in result.get("scenarios", {}).values() if r.get("status") == "ok"]
    best = max(ok, key=lambda r: r["fps_out"], default=None)
    if best is None:
        return f"{len(result.get('scenarios', {}))} scenarios, none ran"
    compiled = sum(w.get("compile_s") or 0 for w in result.get("warm_ups", {}).values())
    label = " ".join(filter(None, [best.get("preset"), "x".join(map(str, best["size"]))]))
    return f"{len(ok)} scenarios ran; fastest: {label} {best['fps_out']:.2f} fps, ttff {best['ttff_s']:.2f} s" + (
        f"; compiling in the warm-ups took {compiled:.1f} s" if result.get("compiled") else ""
    )


def _runtime(folder: Path) -> str:
    check, overlap = _json(folder / "runtime" / "gpu_check.json"), _json(folder / "runtime" / "overlap.json")
    parts = []
    if check is not None:
        bw = check.get("h2d_bandwidth", {})
        parts.append(f"H2D pageable {bw.get('pageable_GBps')} GB/s, pinned {bw.get('pinned_GBps')} GB/s")
        for name, run in check.get("stage_switch", {}).get("runs", {}).items():
            parts.append(f"switch [{name}] max {run['max_exposed_ms']} ms")
    if overlap is not None:
        seq, ovl = overlap.get("sequential", {}), overlap.get("overlapped", {})
        parts.append(
            f"overlap x{ovl.get('realtime_factor', 0):.2f} vs sequential x{seq.get('realtime_factor', 0):.2f}, identical {overlap.get('identical_frames')}"
        )
    return "; ".join(parts)


def _files(part: Path) -> str:
    found = sorted(p.name for p in part.glob("*") if p.is_file())
    return f"files: {', '.join(found)}" if found else ""


#: parts with a headline of their own (part -> its headline, read from the run folder); any other part shows the family GPU
#: benchmark it ran (``<model>-gpu.json``) or lists its files
HEADLINES: dict[str, Callable[[Path], str]] = {
    "streams": _streams,
    "runtime": _runtime,
}


def _headline(folder: Path, part: str) -> str:
    if part in HEADLINES:
        return HEADLINES[part](folder)
    result = _family_result(folder / part)
    return _family_gpu(result) if result is not None else _files(folder / part)


def _number(value: Any, digits: int) -> str:
    return f"{value:.{digits}f}" if isinstance(value, int | float) else ""


def _sessions(record: dict[str, Any]) -> str:
    """Several sessions on one GPU: how many, their fps together, and whether each kept up
    (the row's fps is the slowest session's)."""
    if (record.get("sessions") or 1) <= 1:
        return ""
    return f"{record['sessions']}: {_number(record.get('aggregate_fps'), 2)} fps together, each keeps up: {record.get('all_keep_up')}"


def scenario_table(folder: Path, parts: list[str]) -> list[str]:
    """Every scenario of every part that ran a family GPU benchmark, one row each."""
    rows = [
        "| part | scenario | status | ttff s | fps | real-time factor | steady RTF | peak GiB | compile s | sessions at once |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for part in parts:
        result = _family_result(folder / part) or {}
        for name, r in result.get("scenarios", {}).items():
            if r.get("status") != "ok":
                rows.append(f"| {part} | {name} | {r.get('status')}: {r.get('reason', '')} | | | | | | | |")
                continue
            rows.append(
                f"| {part} | {name} | ok | {r['ttff_s']:.2f} | {r['fps_out']:.2f} | {r['realtime_factor']:.3f} | "
                f"{_number(r.get('steady_realtime_factor'), 3)} | {r.get('peak_device_gib')} | {r.get('compile_s')} | {_sessions(r)} |"
            )
    return rows if len(rows) > 2 else []


def write_readme(folder: Path) -> str:
    lines = [f"# {folder.name}: bench/gpu_all.sh", "", "| part | status | seconds (budget) | headline |", "|---|---|---|---|"]
    parts = []
    for line in (folder / PARTS_FILE).read_text().splitlines():
        part, status, seconds, budget, detail = (line.split("\t") + [""] * 5)[:5]
        parts.append(part)
        headline = _headline(folder, part) if status != "skipped" else ""
        lines.append(f"| {part} | {status} | {seconds} ({budget}) | {'; '.join(filter(None, [detail, headline]))} |")
    table = scenario_table(folder, parts)
    if table:
        lines += ["", "## Family GPU benchmarks (random weights at real size)", "", *table]
    lines += ["", "Each part's log is `<part>.log`; its results are in the folder of the same name."]
    text = "\n".join(lines) + "\n"
    (folder / "README.md").write_text(text)
    return text


if __name__ == "__main__":
    print(write_readme(Path(sys.argv[1])), end="")
