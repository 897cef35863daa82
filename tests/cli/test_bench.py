"""`avatarstream bench` runs its scenarios end to end (tiny model) and writes the documented fields."""

from __future__ import annotations

import json
from pathlib import Path

import torch

from avatarstream.cli.main import main
from avatarstream.families.demo import DemoFamily
from avatarstream.families.demo_bench import production_config
from avatarstream.models.demo import A2VDiT, DemoConfig


def test_tiny_scenarios_write_json_and_plots(tmp_path: Path) -> None:
    scenarios = ["speed", "overhead", "overlap", "memory", "interpolation"]
    args = ["bench", "--model", "demo-tiny", "--seconds", "2", "--repeats", "1", "--minutes", "0.3", "--out", str(tmp_path)]
    assert main(args + [a for s in scenarios for a in ("--scenario", s)]) == 0

    speed = json.loads((tmp_path / "speed.json").read_text())
    for key in ("ttff_s", "fps_out", "realtime_factor", "load_s", "stage_ms_per_chunk", "peak_rss_bytes", "peak_device_bytes", "date", "device"):
        assert key in speed, key
    assert speed["frames"] == 50 and speed["ttff_s"] > 0
    assert set(speed["stage_ms_per_chunk"]) >= {"audio_to_video", "super_resolution", "decode", "context_gen"}
    assert (tmp_path / "speed-stages.png").stat().st_size > 1000

    overhead = json.loads((tmp_path / "overhead.json").read_text())
    assert overhead["identical_frames"] is True, "the hand-written baseline must do exactly the pipeline's work"
    assert overhead["raw_loop_s"] > 0 and "overhead_pct" in overhead and "loop_outside_stages_pct" in overhead

    assert json.loads((tmp_path / "overlap.json").read_text())["identical_frames"] is True

    memory = json.loads((tmp_path / "memory.json").read_text())
    assert memory["frames"] == round(0.3 * 60 * 25)
    assert 0.5 < memory["last_over_first"] < 2.0 and (tmp_path / "memory.png").exists()

    interp = json.loads((tmp_path / "interpolation.json").read_text())
    assert interp["with_i_chunks"]["frames"] == interp["without_i_chunks"]["frames"] == 50


def test_bench_loads_the_weights_folder_as_render_does(tmp_path: Path) -> None:
    """--weights is the model bench measures (it used to measure a random default configuration and ignore the folder)."""
    folder = tmp_path / "weights"
    DemoFamily.random(DemoConfig.tiny(), seed=5).save(folder)
    assert main(["bench", "--model", "demo", "--weights", str(folder), "--seconds", "1", "--repeats", "1", "--out", str(tmp_path / "out")]) == 0
    speed = json.loads((tmp_path / "out" / "speed.json").read_text())
    assert speed["weights"] == str(folder) and speed["resolution"] == [DemoConfig.tiny().image_size] * 2 != [DemoConfig().image_size] * 2


def test_gpu_scenario_refuses_cpu_clearly(tmp_path: Path, capsys) -> None:
    assert main(["bench", "--scenario", "gpu", "--device", "cpu", "--out", str(tmp_path)]) == 2
    assert "needs a CUDA device" in capsys.readouterr().err


def test_production_config_is_about_1_3b_parameters() -> None:
    with torch.device("meta"):
        dit = A2VDiT(production_config())
    params = sum(p.numel() for p in dit.parameters())
    assert 1.1e9 < params < 1.6e9, params


def test_resolution_and_residency_ask_the_model(tmp_path: Path) -> None:
    """The resolution sweep is the model's own (an optional family member); residency streams whichever networks have blocks."""
    args = ["bench", "--model", "demo-tiny", "--seconds", "1", "--repeats", "1", "--out", str(tmp_path), "--scenario", "resolution", "--scenario", "residency"]
    assert main(args) == 0
    size = DemoConfig.tiny().image_size
    rows = json.loads((tmp_path / "resolution.json").read_text())["rows"]
    assert [r["resolution"] for r in rows] == [size // 2, size, size * 3 // 2]
    residency = json.loads((tmp_path / "residency.json").read_text())
    assert residency["streamed:1"]["config"] == {"a2v_dit": "streamed:1", "sr_dit": "streamed:1", "default": "offloaded"}
    assert all(residency[name]["outputs_identical"] for name in ("resident", "offloaded", "streamed:1"))


def test_a_model_without_the_capability_is_refused_in_one_line(tmp_path: Path, capsys) -> None:
    for scenario, member in (("contention", "cpu_real_time"), ("overhead", "raw_frames"), ("interpolation", "seam_smoothing_off")):
        assert main(["bench", "--scenario", scenario, "--model", "colourbars", "--out", str(tmp_path)]) == 2
        (err,) = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error:")]  # one line (and the progress bar)
        assert f"family member {member}" in err and "colourbars does not" in err and "demo-tiny" in err, err
    assert not list(tmp_path.glob("*.json"))
