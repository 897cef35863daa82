"""The LiveAvatar GPU benchmark: its CPU dry run renders every scenario and records what a GPU run reports."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from avatarstream.families.liveavatar import gpu_bench as bench
from avatarstream.runtime.launch import torchrun_command
from avatarstream.runtime.parallel.layout import parse_parallel

ROOT = Path(__file__).parents[2]


@pytest.fixture(scope="module")
def dry_run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    out = tmp_path_factory.mktemp("liveavatar-gpu")
    command = [sys.executable, "-m", "avatarstream.families.liveavatar.gpu_bench", "--tiny", "--device", "cpu", "--threads", "1", "--out", str(out)]
    done = subprocess.run(command, env={**os.environ, "OMP_NUM_THREADS": "1"}, check=False, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "running: resident at 64x64" in done.stdout
    return json.loads((out / bench.RESULT_FILE).read_text())


def test_dry_run_renders_every_scenario_with_its_figures(dry_run: dict[str, Any]) -> None:
    assert list(dry_run["scenarios"]) == bench.TINY_PLAN.scenarios() == list(bench.RESIDENCIES)
    for name, record in dry_run["scenarios"].items():
        assert record["status"] == "ok", (name, record)
        for key in ("ttff_s", "fps_out", "realtime_factor", "steady_fps", "wall_s"):
            assert isinstance(record[key], float) and math.isfinite(record[key]) and record[key] > 0, (name, key)
        assert record["frames"] == round(bench.TINY_PLAN.seconds * 25)
        assert set(record["stage_seconds"]) == {"reference_encode", "prompt_encode", "context_gen", "audio_to_video", "decode"}
        assert record["kv_cache_bytes"]["step_caches"] > record["kv_cache_bytes"]["sink"] > 0
        assert record["peak_device_bytes"] is None  # no device allocator on a CPU
    assert dry_run["tiny"] and dry_run["weight_bytes"] > 0 and dry_run["processes"] == 1
    assert {record["parallel"] for record in dry_run["scenarios"].values()} == {None}


def test_the_widest_layout_the_gpus_allow() -> None:
    assert [bench.layout_for(gpus) for gpus in (1, 2, 3, 4, 5, 7, 8, 16)] == [
        None, ("sp=2", 2), ("sp=2", 2), ("steps=4", 4), ("steps=4,decode", 5), ("steps=4,decode", 5), ("steps=4,sp=2", 8), ("steps=4,sp=2", 8)
    ]  # fmt: skip
    for layout, processes in filter(None, map(bench.layout_for, range(1, 9))):
        parse_parallel(layout, processes)  # an InputError unless the layout runs in exactly that many processes


def test_a_parallel_dry_run_under_torchrun_measures_on_rank_0(tmp_path: Path) -> None:
    """sp=2 over two gloo processes (the steps layouts' own frames are tests/runtime/test_parallel_steps.py's)."""
    argv = ["--tiny", "--device", "cpu", "--threads", "1", "--out", str(tmp_path), "--parallel", "sp=2"]
    done = subprocess.run(torchrun_command(2, argv, "avatarstream.families.liveavatar.gpu_bench"), env={**os.environ, "OMP_NUM_THREADS": "1"},
                          check=False, capture_output=True, text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    result = json.loads((tmp_path / bench.RESULT_FILE).read_text())
    assert result["processes"] == 2 and list(result["scenarios"]) == ["resident"]
    record = result["scenarios"]["resident"]
    assert record["status"] == "ok" and record["parallel"] == "sp=2,cfg=1" and record["frames"] == round(bench.TINY_PLAN.seconds * 25)


def test_the_script_runs_the_module_under_the_time_limit() -> None:
    script = (ROOT / "bench" / "liveavatar_gpu.sh").read_text()
    assert "source bench/gpu_env.sh" in script
    assert "timeout --kill-after=15 480" in script and "-m avatarstream.families.liveavatar.gpu_bench" in script
    assert "timeout --kill-after=15 240" in script and "timeout --kill-after=15 225" in script  # several GPUs: 240 + 225 s < 8 min
    assert '--parallel "$LAYOUT"' in script
    assert os.access(ROOT / "bench" / "liveavatar_gpu.sh", os.X_OK)
    assert subprocess.run(["bash", "-n", str(ROOT / "bench" / "liveavatar_gpu.sh")], check=False).returncode == 0
