"""The contention scenario renders next to a real competing process and reports each setting's slowdown."""

from __future__ import annotations

from pathlib import Path

from avatarstream.benchmarks.contention import measure_contention


def test_default_and_spinning_renders_alone_and_loaded(tmp_path: Path) -> None:
    result = measure_contention("demo-tiny", seconds=1.0, repeats=1, out_dir=tmp_path, variants=("default", "spinning"))
    default, spinning = result["rows"]
    assert (default["variant"], spinning["variant"]) == ("default", "spinning")
    # the fix is what a render gets without asking; the before-variant really ran with OpenMP's spin count
    assert default["cpu"]["omp_wait_policy"] == "PASSIVE" and default["cpu"]["gomp_spincount"] is None and default["env"] == {}
    assert spinning["env"] == {"GOMP_SPINCOUNT": "300000"}
    for row in result["rows"]:
        assert row["realtime_factor_alone"] > 0 and row["realtime_factor_loaded"] > 0
        assert row["slowdown"] == round(row["realtime_factor_alone"] / row["realtime_factor_loaded"], 2)
    assert not list(tmp_path.iterdir()), "the scenario leaves only what the caller writes"
