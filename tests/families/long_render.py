"""A family's long CLI render of a tiny checkpoint, and the check that its host memory did not grow."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np

from sources.sine_files import write_sine


def render_report(model: str, weights: Path | None, tmp_path: Path, seconds: float, options: list[str]) -> dict[str, Any]:
    """``avatarstream render`` of ``seconds`` of a tone into a fragmented MP4, in a fresh process; its report (``weights``
    None: the model's own)."""
    audio, report = tmp_path / f"{seconds:g}s.wav", tmp_path / f"{seconds:g}s.json"
    write_sine(audio, "pcm_s16le", 16000, 1, seconds)
    exe = Path(sys.executable).with_name("avatarstream")
    cmd = [str(exe), "render", "--model", model, *(["--weights", str(weights)] if weights is not None else []), "--audio", str(audio), "--out", str(tmp_path / f"{seconds:g}s.mp4"),
           "--fragmented", "--report", str(report), "--threads", "1", "--no-progress", *options]  # fmt: skip
    done = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, done.stderr[-3000:]
    report_values: dict[str, Any] = json.loads(report.read_text())
    return report_values


def assert_no_growth(report: dict[str, Any], window_s: float = 30.0) -> None:
    """Within one long render: the process's peak RSS at its end is where it was after ``window_s`` (2 %); the RSS per
    chunk sits in its last ``window_s`` where it sat in its first (medians, 2 %), and has no upward trend over the run (1 %).

    Medians, not maxima: one chunk's RSS swings by a tenth or more with where the allocator put that chunk's temporaries
    (glibc keeps or returns freed blocks as its thresholds move), so the largest of a window's samples is noise; a leak
    moves the level every chunk sits at, and the process's peak catches any chunk that rises above the early high-water
    mark."""
    chunks = report["chunks"]
    window = max(1, round(len(chunks) * window_s / report["duration_s"]))
    peak_early, peak_end = chunks[window - 1]["peak_rss_bytes"], chunks[-1]["peak_rss_bytes"]
    rss = np.array([c["rss_bytes"] for c in chunks], dtype=np.float64)
    first, last = np.median(rss[:window]), np.median(rss[-window:])
    print(
        f"\nprocess peak: {peak_early / 2**20:.1f} MiB at {window_s:g} s, {peak_end / 2**20:.1f} MiB at the end; RSS per chunk: "
        f"first {window_s:g} s median {first / 2**20:.1f} MiB (max {rss[:window].max() / 2**20:.1f}), "
        f"last {window_s:g} s median {last / 2**20:.1f} MiB (max {rss[-window:].max() / 2**20:.1f})"
    )
    assert peak_end / peak_early < 1.02, f"the process's peak RSS rose {100 * (peak_end / peak_early - 1):.1f}% after the first {window_s:g} s"
    assert last / first < 1.02, f"the RSS per chunk of the last {window_s:g} s sits {100 * (last / first - 1):.1f}% above the first's"
    warm = rss[len(rss) // 10 :]
    growth = np.polyfit(np.arange(len(warm)), warm, 1)[0] * len(warm) / warm.mean()
    assert growth < 0.01, f"RSS trend {100 * growth:.2f}% over the run"
