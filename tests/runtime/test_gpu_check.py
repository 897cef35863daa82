"""The GPU check script runs end to end (tiny sizes on the CPU) and writes one JSON result."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "bench/gpu_check.py"


def test_smoke_run_writes_every_section(tmp_path: Path) -> None:
    out = tmp_path / "check.json"
    env = {**os.environ, "OMP_NUM_THREADS": "1"}  # tiny matrices: threads only add contention
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--device", "cpu", "--smoke", "--out", str(out)], env=env, check=False, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(out.read_text())
    assert result["h2d_bandwidth"]["pageable_GBps"] > 0
    run = result["streamed_vs_resident"]["runs"][0]
    assert run["resident"]["h2d_bytes_per_forward"] == 0
    block = result["streamed_vs_resident"]["model"]["block_bytes"]
    assert 3 * block <= run["streamed:2"]["h2d_bytes_per_forward"] < 3.1 * block  # each of the 3 blocks once (plus alignment)
    assert run["streamed:2"]["peak_weight_bytes"] < run["resident"]["peak_weight_bytes"]
    switch = result["stage_switch"]
    assert len(switch["runs"]) == 8 and isinstance(switch["streamed_configs_within_budget"], bool)
    assert all(r["switches"]["audio_to_video->super_resolution"]["count"] == 3 for r in switch["runs"].values())


def test_cuda_without_a_gpu_is_a_clear_error(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, str(SCRIPT), "--out", str(tmp_path / "x.json")], check=False, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "no CUDA GPU visible" in done.stderr
