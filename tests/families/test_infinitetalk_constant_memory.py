"""A 10-minute infinitetalk render peaks in host memory where a 30-second one does (tiny checkpoint, CPU)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np

from avatarstream.families.infinitetalk.layout import WeightsLayout
from sources.sine_files import write_sine

#: Small and fast: 16x16 frames, one step, 81-frame chunks, latent hand-over, a 1 s audio window.
FAST = ["--model-preset", "flashtalk", "--size", "16x16", "--steps", "1", "--chunk-frames", "81", "--motion-frames", "5",
        "--motion", "latent", "--audio-window", "1", "--audio-lookahead", "2", "--threads", "1", "--no-progress"]  # fmt: skip


def _render(weights: Path, tmp_path: Path, seconds: float) -> dict:
    audio, report = tmp_path / f"{seconds:g}s.wav", tmp_path / f"{seconds:g}s.json"
    write_sine(audio, "pcm_s16le", 16000, 1, seconds)
    exe = Path(sys.executable).with_name("avatarstream")
    cmd = [str(exe), "render", "--model", "infinitetalk", "--weights", str(weights), "--audio", str(audio), "--out", str(tmp_path / f"{seconds:g}s.mp4"),
           "--fragmented", "--report", str(report), *FAST]  # fmt: skip
    done = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(report.read_text())


def test_ten_minutes_peak_like_thirty_seconds(tiny_original: WeightsLayout, tmp_path: Path) -> None:
    short = _render(tiny_original.base.parent, tmp_path, 30)
    long = _render(tiny_original.base.parent, tmp_path, 600)
    assert short["frames"] == 750 and long["frames"] == 15000
    ratio = long["peak_rss_bytes"] / short["peak_rss_bytes"]
    print(f"\npeak RSS: 30 s {short['peak_rss_bytes'] / 2**20:.1f} MiB, 10 min {long['peak_rss_bytes'] / 2**20:.1f} MiB ({100 * (ratio - 1):+.2f} %)")
    assert ratio < 1.02, f"peak RSS grew {100 * (ratio - 1):.1f}% for 20x the audio"
    assert short["peak_device_bytes"] is None and long["peak_device_bytes"] is None  # no device allocator on the CPU
    rss = np.array([c["rss_bytes"] for c in long["chunks"]], dtype=np.float64)
    warm = rss[len(rss) // 10 :]
    growth = np.polyfit(np.arange(len(warm)), warm, 1)[0] * len(warm) / warm.mean()
    assert growth < 0.01, f"RSS trend {100 * growth:.2f}% over the run"
