"""Memory does not grow with duration: a 200 s render peaks where a 20 s one does (DESIGN.md §5)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np

from sources.sine_files import write_sine


def render_report(tmp_path: Path, seconds: float) -> dict:
    audio, report = tmp_path / f"{seconds:g}s.wav", tmp_path / f"{seconds:g}s.json"
    write_sine(audio, "pcm_s16le", 16000, 1, seconds)
    exe = Path(sys.executable).with_name("avatarstream")
    cmd = [
        str(exe),
        "render",
        "--model",
        "demo-tiny",
        "--no-progress",
        "--audio",
        str(audio),
        "--out",
        str(tmp_path / f"{seconds:g}s.mp4"),
        "--report",
        str(report),
    ]
    result = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stderr
    return json.loads(report.read_text())


def test_long_render_peaks_like_a_short_one(tmp_path: Path) -> None:
    short = render_report(tmp_path, 20)
    long = render_report(tmp_path, 200)
    assert long["frames"] == 5000 and short["frames"] == 500
    ratio = long["peak_rss_bytes"] / short["peak_rss_bytes"]
    assert ratio < 1.03, f"peak RSS grew {100 * (ratio - 1):.1f}% for 10x the audio"

    # per-chunk RSS of the long run: no upward trend once warm
    rss = np.array([c["rss_bytes"] for c in long["chunks"]], dtype=np.float64)
    warm = rss[len(rss) // 10 :]
    slope_per_chunk = np.polyfit(np.arange(len(warm)), warm, 1)[0]
    growth_over_run = slope_per_chunk * len(warm) / warm.mean()
    assert growth_over_run < 0.01, f"RSS trend {100 * growth_over_run:.2f}% over the run"
