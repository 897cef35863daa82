"""The contention scenario renders next to a real competing process and reports each setting's slowdown."""

from __future__ import annotations

from pathlib import Path

from avatarstream.benchmarks.contention import measure_contention, measure_load_memory


def test_default_and_passive_renders_alone_and_loaded(tmp_path: Path) -> None:
    result = measure_contention("demo-tiny", seconds=3.0, repeats=1, out_dir=tmp_path, variants=("default", "passive"))
    default, passive = result["rows"]
    assert (default["variant"], passive["variant"]) == ("default", "passive")
    # the default is what a render gets without asking: OpenMP's own policy, threads following the machine
    assert default["env"] == {} and default["options"] == [] and default["cpu"]["omp_wait_policy"] is None
    loaded = default["cpu_loaded"]["follows_machine"]
    assert loaded["seconds_on_fewer_threads"] > 0 and loaded["other_programs_cores"] > 0.5, loaded  # it saw the competing job
    # the before-variant really ran with sleeping workers on every core, whatever the load
    assert passive["cpu_loaded"]["omp_wait_policy"] == "PASSIVE" and passive["cpu_loaded"]["follows_machine"] is None
    assert passive["options"] == ["--threads", str(result["cores"])]
    for row in result["rows"]:
        assert row["realtime_factor_alone"] > 0 and row["realtime_factor_loaded"] > 0
        assert row["slowdown"] == round(row["realtime_factor_alone"] / row["realtime_factor_loaded"], 2)
    assert not list(tmp_path.iterdir()), "the scenario leaves only what the caller writes"


def test_peak_memory_of_a_short_and_a_long_render_next_to_a_competing_job(tmp_path: Path) -> None:
    result = measure_load_memory("demo-tiny", seconds=1.0, repeats=1, out_dir=tmp_path, longer=4.0)
    short, long = result["rows"]
    assert (short["seconds"], long["seconds"]) == (1.0, 4.0)
    assert short["peak_rss_mib"] > 100 and long["realtime_factor"] > 0
    assert result["long_over_short"] == round(long["peak_rss_mib"] / short["peak_rss_mib"], 4)
    assert result["long_over_short"] < 1.1, "a longer render on a busy machine must not need more memory"
    assert not list(tmp_path.iterdir())
