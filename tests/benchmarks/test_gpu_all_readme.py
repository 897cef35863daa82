"""The gpu_all README: a part that ran a family's GPU benchmark (``<model>-gpu.json``) gets its headline and table rows
from that file, whichever registered family it was; other parts keep their own headline or list their files."""

from __future__ import annotations

import json
from pathlib import Path

from avatarstream.benchmarks.gpu_all_readme import write_readme


def _record(preset: str | None, fps: float, **extra: object) -> dict[str, object]:
    found = {"status": "ok", "size": [64, 48], "ttff_s": 0.5, "fps_out": fps, "realtime_factor": fps / 25, "peak_device_gib": 1.5, **extra}
    return found if preset is None else {**found, "preset": preset}


def test_family_parts_are_found_by_their_results(tmp_path: Path) -> None:
    rows = [("eager", "ok"), ("blocks", "ok"), ("parallel", "ok"), ("compiled", "skipped")]
    (tmp_path / "parts.tsv").write_text("".join(f"{part}\t{status}\t10\t60\t\n" for part, status in rows))
    for part in ("eager", "blocks", "parallel"):
        (tmp_path / part).mkdir()
    scenarios = {"fast": _record("fast", 30.0, steady_realtime_factor=1.25, compile_s=None), "slow": {"status": "skipped", "reason": "out of memory"}}
    (tmp_path / "eager" / "demo-gpu.json").write_text(json.dumps({"scenarios": scenarios}))
    sessions = {"resident": _record(None, 12.0), "x3": _record(None, 26.0, sessions=3, aggregate_fps=78.5, all_keep_up=True)}
    (tmp_path / "blocks" / "colourbars-gpu.json").write_text(json.dumps({"scenarios": sessions}))
    (tmp_path / "parallel" / "parallel.json").write_text("{}")
    readme = write_readme(tmp_path)
    assert "| eager | ok | 10 (60) | 1 scenarios ran; fastest: fast 64x48 30.00 fps, ttff 0.50 s |" in readme
    assert "| blocks | ok | 10 (60) | 2 scenarios ran; fastest: 64x48 26.00 fps, ttff 0.50 s |" in readme
    assert "| parallel | ok | 10 (60) | files: parallel.json |" in readme
    assert "| compiled | skipped | 10 (60) |  |" in readme
    assert "| eager | fast | ok | 0.50 | 30.00 | 1.200 | 1.250 | 1.5 | None |  |" in readme
    assert "| eager | slow | skipped: out of memory | | | | | | | |" in readme
    assert "| blocks | resident | ok | 0.50 | 12.00 | 0.480 |  | 1.5 | None |  |" in readme  # a record without a steady figure
    assert "| blocks | x3 | ok | 0.50 | 26.00 | 1.040 |  | 1.5 | None | 3: 78.50 fps together, each keeps up: True |" in readme
