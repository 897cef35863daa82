"""bench/gpu_all.sh: its CPU dry run (tiny models) runs every part in order and writes the README table; a run that has
no time left skips the rest and still writes it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "bench/gpu_all.sh"
PARTS = ["streams", "infinitetalk-eager", "liveavatar", "cascade", "flashhead", "fp8", "infinitetalk-compiled", "runtime", "parallel"]


def _dry_run(out: Path, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {**os.environ, "PYTHON": sys.executable, "OMP_NUM_THREADS": "1", **env}
    return subprocess.run([str(SCRIPT), "--dry-run", "--out", str(out)], env=environ, check=False, capture_output=True, text=True, timeout=1600)


def _rows(out: Path) -> dict[str, list[str]]:
    return {line.split("\t")[0]: line.split("\t") for line in (out / "parts.tsv").read_text().splitlines()}


def test_dry_run_runs_every_part_and_writes_the_table(tmp_path: Path) -> None:
    done = _dry_run(tmp_path)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    rows = _rows(tmp_path)
    assert list(rows) == PARTS  # most informative first
    for part in ("streams", "infinitetalk-eager", "cascade", "flashhead", "fp8", "infinitetalk-compiled", "runtime"):
        assert rows[part][1] == "ok", (part, rows[part], (tmp_path / f"{part}.log").read_text()[-2000:])
    assert rows["parallel"][1] == "skipped" and "more than one GPU" in rows["parallel"][4]
    assert rows["liveavatar"][1] == "ok"
    readme = (tmp_path / "README.md").read_text()
    assert all(f"| {part} |" in readme for part in PARTS)
    assert "overlapped frames identical to inline: True" in readme  # the streams part compared the two runs
    assert "| infinitetalk-compiled | flashtalk 64x48 resident | ok |" in readme
    assert "| cascade | dits-offloaded | ok |" in readme  # LiveAvatar then FlashVSR, both DiTs handed the device in turn
    assert "| flashhead | lite eager x3 | ok |" in readme and "| flashhead | pro compiled | ok |" in readme  # sessions at once; compiled
    flashhead = json.loads((tmp_path / "flashhead" / "flashhead-gpu.json").read_text())
    assert all(r["status"] == "ok" for r in flashhead["scenarios"].values()) and len(flashhead["scenarios"]["lite eager x3"]["per_session"]) == 3
    assert all(flashhead["warm_ups"][f"{v} compiled"]["compile_s"] > 0 for v in ("pro", "lite")), flashhead["warm_ups"]  # compiling happens there
    cascade = json.loads((tmp_path / "cascade" / "cascade-gpu.json").read_text())
    assert cascade["scenarios"]["resident"]["size"] == [256, 256] and "decode->flashvsr" in cascade["scenarios"]["resident"]["stage_switches"]
    for result in ("streams/streams.json", "infinitetalk-eager/infinitetalk-gpu.json", "runtime/gpu_check.json", "runtime/overlap.json"):
        assert (tmp_path / result).is_file(), result
    for family in ("liveavatar", "infinitetalk"):  # bf16 against fp8: both rendered, the weights smaller, the videos compared
        fp8 = json.loads((tmp_path / "fp8" / family / "fp8-gpu.json").read_text())
        assert fp8["bf16"]["status"] == fp8["fp8"]["status"] == "ok" and fp8["bf16"]["frames"] == fp8["fp8"]["frames"] > 0, fp8
        assert fp8["fp8"]["weight_bytes"]["dit"] < fp8["bf16"]["weight_bytes"]["dit"] and fp8["quantized"].startswith("fp8 weights"), fp8
        assert 20 < fp8["psnr_db"] < 100, fp8  # close, not identical: the tiny random weights' distance
    assert fp8["fp8"]["options"] == {**fp8["options"]} and "kv_cache_dtype" not in fp8["fp8"]["options"]  # InfiniteTalk keeps no KV cache


def test_no_time_left_skips_the_rest_and_still_writes_the_table(tmp_path: Path) -> None:
    done = _dry_run(tmp_path, TOTAL_S="31", MIN_PART_S="31")  # any part takes over a second: none fits after the first
    assert done.returncode == 0, done.stderr[-3000:]
    rows = _rows(tmp_path)
    assert rows["streams"][3] == "31"  # the first part runs within what is left, not its own budget
    assert all(rows[part][1] == "skipped" for part in ("infinitetalk-eager", "infinitetalk-compiled", "runtime"))
    assert "no time left" in rows["runtime"][4]
    assert "| runtime | skipped |" in (tmp_path / "README.md").read_text()


def test_parts_runs_only_those_and_a_second_call_adds_its_rows(tmp_path: Path) -> None:
    for parts in ("streams", "parallel"):
        done = subprocess.run([str(SCRIPT), "--dry-run", "--out", str(tmp_path), "--parts", parts], env={**os.environ, "PYTHON": sys.executable,
                              "OMP_NUM_THREADS": "1"}, check=False, capture_output=True, text=True, timeout=600)  # fmt: skip
        assert done.returncode == 0, done.stderr[-3000:]
    rows = _rows(tmp_path)
    assert list(rows) == ["streams", "parallel"] and rows["streams"][1] == "ok"
    readme = (tmp_path / "README.md").read_text()
    assert "| streams | ok |" in readme and "| parallel | skipped |" in readme and "| fp8 |" not in readme
