"""``render --deterministic``: the same seed gives bit-identical frames whether the machine is quiet or busy (by default
torch's thread count follows other programs' load, and a different count can change the last bits of some frames)."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

from sources.sine_files import write_sine

BURN = "while True: pass"


def _render(audio: Path, folder: Path) -> tuple[list[str], dict]:
    report = folder.with_suffix(".json")
    argv = ["render", "--deterministic", "--no-progress", "--audio", str(audio), "--out", "-", "--frames", str(folder), "--report", str(report)]
    subprocess.run([sys.executable, "-m", "avatarstream.cli.main", *argv], check=True, capture_output=True, timeout=600)
    frames = [hashlib.sha256(path.read_bytes()).hexdigest() for path in sorted(folder.glob("*.png"))]
    return frames, json.loads(report.read_text())


def test_the_same_seed_gives_the_same_frames_on_a_busy_machine(tmp_path: Path) -> None:
    audio = tmp_path / "speech.wav"
    write_sine(audio, "pcm_s16le", 16000, 1, 1.2)
    quiet, quiet_report = _render(audio, tmp_path / "quiet")
    burners = [subprocess.Popen([sys.executable, "-c", BURN]) for _ in range(os.cpu_count() or 1)]  # every core taken
    try:
        busy, busy_report = _render(audio, tmp_path / "busy")
    finally:
        for burner in burners:
            burner.kill()
            burner.wait()
    assert len(quiet) == 30 and busy == quiet
    for report in (quiet_report, busy_report):
        assert report["cpu"]["follows_machine"] is None and report["cpu"]["threads"] == report["cpu"]["cores"]  # held, not followed
