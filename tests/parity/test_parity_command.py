"""``avatarstream parity`` on the golden set made with the reference implementation: every case within tolerance."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from safetensors.torch import load_file, save_file

from avatarstream.cli.main import main


@pytest.fixture(scope="module")
def parity_rows(golden_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> list[dict]:
    out = tmp_path_factory.mktemp("parity") / "parity.json"
    assert main(["parity", str(golden_dir), "--json", str(out)]) == 0
    return json.loads(out.read_text())


def test_every_case_of_the_golden_set_runs_and_passes(parity_rows: list[dict], golden_dir: Path) -> None:
    spec = json.loads((golden_dir / "golden.json").read_text())
    assert {r["case"] for r in parity_rows} == set(spec["cases"]) == {"dit", "audio", "vae", "sampler"}
    failed = [r for r in parity_rows if not r["passed"]]
    assert not failed, failed
    names = {f"{r['case']}/{r['name']}" for r in parity_rows}
    expected = {
        "dit/velocity_0", "dit/velocity_1", "dit/audio_tokens", "audio/waveform", "audio/features",
        "audio/window_chunk0", "audio/window_chunk1", "audio/window_last", "vae/video", "vae/latent", "vae/image_latent",
        "sampler/timesteps", "sampler/c0_x0", "sampler/c1_x0", "sampler/video",
        "sampler/c0 teacher-forced velocities", "sampler/c1 update from stored velocities",
    }  # fmt: skip
    assert expected <= names


def test_tolerances_are_the_golden_sets_own(parity_rows: list[dict], golden_dir: Path) -> None:
    spec = json.loads((golden_dir / "golden.json").read_text())["cases"]
    by_name = {(r["case"], r["name"]): r for r in parity_rows}
    assert by_name[("dit", "velocity_0")]["tolerance"] == spec["dit"]["tolerance"]["atol"]
    assert by_name[("sampler", "video")]["tolerance"] == spec["sampler"]["tolerance"]["video_atol"]
    assert by_name[("audio", "window_last")]["tolerance"] == 0.0  # windows are pure indexing: exact


def test_a_perturbed_reference_fails_with_exit_code_1(golden_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    broken = tmp_path / "golden"
    shutil.copytree(golden_dir, broken)
    (broken / "cases" / "dit.safetensors").chmod(0o644)
    tensors = load_file(str(broken / "cases" / "dit.safetensors"))
    tensors["velocity_1"] = tensors["velocity_1"] + 1e-3  # over the 3e-4 tolerance
    save_file(tensors, str(broken / "cases" / "dit.safetensors"))
    assert main(["parity", str(broken)]) == 1
    out = capsys.readouterr().out
    assert any(line.startswith("dit/velocity_1") and line.endswith("OVER") for line in out.splitlines())
    assert any(line.startswith("dit/velocity_0") and line.endswith("ok") for line in out.splitlines())


def test_a_folder_that_is_no_golden_set_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["parity", str(tmp_path)]) == 2
    assert "no golden.json" in capsys.readouterr().err
