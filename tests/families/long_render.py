"""A family's short and long CLI renders of a tiny checkpoint, and the check that host memory stayed flat between them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
from sources.sine_files import write_sine


def render_report(model: str, weights: Path, tmp_path: Path, seconds: float, options: list[str]) -> dict[str, Any]:
    """``avatarstream render`` of ``seconds`` of a tone into a fragmented MP4, in a fresh process; its report."""
    audio, report = tmp_path / f"{seconds:g}s.wav", tmp_path / f"{seconds:g}s.json"
    write_sine(audio, "pcm_s16le", 16000, 1, seconds)
    exe = Path(sys.executable).with_name("avatarstream")
    cmd = [str(exe), "render", "--model", model, "--weights", str(weights), "--audio", str(audio), "--out", str(tmp_path / f"{seconds:g}s.mp4"),
           "--fragmented", "--report", str(report), "--threads", "1", "--no-progress", *options]  # fmt: skip
    done = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, done.stderr[-3000:]
    report_values: dict[str, Any] = json.loads(report.read_text())
    return report_values


def assert_flat(short: dict[str, Any], long: dict[str, Any], limit: float = 1.02) -> None:
    """The long render peaked where the short one did (within ``limit``), and its RSS per chunk has no upward trend."""
    ratio = long["peak_rss_bytes"] / short["peak_rss_bytes"]
    print(f"\npeak RSS: {short['duration_s']:g} s {short['peak_rss_bytes'] / 2**20:.1f} MiB, {long['duration_s']:g} s "
          f"{long['peak_rss_bytes'] / 2**20:.1f} MiB ({100 * (ratio - 1):+.2f} %)")  # fmt: skip
    assert ratio < limit, f"peak RSS grew {100 * (ratio - 1):.1f}% for {long['duration_s'] / short['duration_s']:g}x the audio"
    assert short["peak_device_bytes"] is None and long["peak_device_bytes"] is None  # no device allocator on the CPU
    rss = np.array([c["rss_bytes"] for c in long["chunks"]], dtype=np.float64)
    warm = rss[len(rss) // 10 :]
    growth = np.polyfit(np.arange(len(warm)), warm, 1)[0] * len(warm) / warm.mean()
    assert growth < 0.01, f"RSS trend {100 * growth:.2f}% over the run"
