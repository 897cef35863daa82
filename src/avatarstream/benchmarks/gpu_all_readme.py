"""The README of a ``bench/gpu_all.sh`` run: one row per part (status, time against its budget, headline), then the
InfiniteTalk scenarios side by side, eager and compiled.

    python -m avatarstream.benchmarks.gpu_all_readme RESULTS_DIR     # reads RESULTS_DIR/parts.tsv and each part's JSON
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

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


def _infinitetalk(sub: str) -> Callable[[Path], str]:
    def headline(folder: Path) -> str:
        result = _json(folder / sub / "infinitetalk-gpu.json")
        if result is None:
            return ""
        ok = [r for r in result.get("scenarios", {}).values() if r.get("status") == "ok"]
        best = max(ok, key=lambda r: r["fps_out"], default=None)
        if best is None:
            return f"{len(result.get('scenarios', {}))} scenarios, none ran"
        compiled = sum(w.get("compile_s") or 0 for w in result.get("warm_ups", {}).values())
        return (
            f"{len(ok)} scenarios ran; fastest: {best['preset']} {best['size'][0]}x{best['size'][1]} {best['fps_out']:.2f} fps, ttff {best['ttff_s']:.2f} s"
            + (f"; compiling in the warm-ups took {compiled:.1f} s" if result.get("compiled") else "")
        )

    return headline


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


def _files(sub: str) -> Callable[[Path], str]:
    def headline(folder: Path) -> str:
        names = sorted(p.name for p in (folder / sub).glob("*") if p.is_file())
        return f"files: {', '.join(names)}" if names else ""

    return headline


HEADLINES: dict[str, Callable[[Path], str]] = {
    "streams": _streams,
    "infinitetalk-eager": _infinitetalk("infinitetalk-eager"),
    "infinitetalk-compiled": _infinitetalk("infinitetalk-compiled"),
    "runtime": _runtime,
    "liveavatar": _files("liveavatar"),
    "parallel": _files("parallel"),
}


def scenario_table(folder: Path) -> list[str]:
    """Every InfiniteTalk scenario of the eager and the compiled part, one row each."""
    rows = [
        "| part | scenario | status | ttff s | fps | real-time factor | steady RTF | peak GiB | compile s |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for sub in ("infinitetalk-eager", "infinitetalk-compiled"):
        result = _json(folder / sub / "infinitetalk-gpu.json") or {}
        for name, r in result.get("scenarios", {}).items():
            if r.get("status") != "ok":
                rows.append(f"| {sub} | {name} | {r.get('status')}: {r.get('reason', '')} | | | | | | |")
                continue
            rows.append(
                f"| {sub} | {name} | ok | {r['ttff_s']:.2f} | {r['fps_out']:.2f} | {r['realtime_factor']:.3f} | "
                f"{r['steady_realtime_factor']:.3f} | {r['peak_device_gib']} | {r.get('compile_s')} |"
            )
    return rows if len(rows) > 2 else []


def write_readme(folder: Path) -> str:
    lines = [f"# {folder.name}: bench/gpu_all.sh", "", "| part | status | seconds (budget) | headline |", "|---|---|---|---|"]
    for line in (folder / PARTS_FILE).read_text().splitlines():
        part, status, seconds, budget, detail = (line.split("\t") + [""] * 5)[:5]
        headline = HEADLINES.get(part, lambda _: "")(folder) if status != "skipped" else ""
        lines.append(f"| {part} | {status} | {seconds} ({budget}) | {'; '.join(filter(None, [detail, headline]))} |")
    table = scenario_table(folder)
    if table:
        lines += ["", "## InfiniteTalk (random bf16 weights at real size)", "", *table]
    lines += ["", "Each part's log is `<part>.log`; its results are in the folder of the same name."]
    text = "\n".join(lines) + "\n"
    (folder / "README.md").write_text(text)
    return text


if __name__ == "__main__":
    print(write_readme(Path(sys.argv[1])), end="")
