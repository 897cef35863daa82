"""families/flashhead/gpu_bench.py: its real sizes are the downloads', its tiny networks the tiny checkpoint's, and its CPU dry
run renders every kind of scenario (eager, compiled after a compiling warm-up, three sessions at once) within its budget."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import torch

from avatarstream.families.flashhead import gpu_bench
from avatarstream.families.flashhead.family import FlashHeadFamily
from avatarstream.families.flashhead.gpu_bench import RESULT_FILE, main
from avatarstream.families.flashhead.options import FlashHeadOptions
from avatarstream.families.flashhead.random_networks import meta_networks
from avatarstream.families.flashhead.tiny import write_tiny_checkpoint

#: Bytes of the real downloads (the golden set's README, from download manifests at HF revision 59119b6): (DiT, VAE, wav2vec2).
DOWNLOADS = {"pro": (6_030_864_656, 507_609_880, 377_607_901), "lite": (6_107_542_048, 1_676_798_532, 377_607_901)}
#: What a file holds beside float32 tensors of the network: its header (safetensors, pickle), and wav2vec2's CTC head.
OVERHEAD = 128 * 1024
ARGS = ["--tiny", "--device", "cpu", "--threads", "1", "--compile-backend", "aot_eager"]


def _bytes(network: torch.nn.Module) -> int:
    return 4 * sum(t.numel() for t in [*network.parameters(), *network.buffers()])


@pytest.mark.parametrize("variant", ["pro", "lite"])
def test_real_size_networks_are_the_downloads_in_float32(variant: str) -> None:
    networks = meta_networks(variant, tiny=False)
    for network, download in zip((networks.dit, networks.vae, networks.audio_encoder), DOWNLOADS[variant], strict=True):
        assert 0 < download - _bytes(network) < OVERHEAD, (type(network).__name__, download, _bytes(network))


@pytest.mark.parametrize("variant", ["pro", "lite"])
def test_tiny_networks_are_the_tiny_checkpoints(tmp_path: Path, variant: str) -> None:
    loaded = FlashHeadFamily.load(write_tiny_checkpoint(tmp_path, variant=variant), FlashHeadOptions(preset=variant)).networks
    built = meta_networks(variant, tiny=True)
    for name in ("dit", "vae", "audio_encoder"):
        shapes = {k: tuple(v.shape) for k, v in getattr(built, name).state_dict().items()}
        assert shapes == {k: tuple(v.shape) for k, v in getattr(loaded, name).state_dict().items()}, name


def test_dry_run_renders_eager_compiled_and_sessions_at_once(tmp_path: Path) -> None:
    torch._dynamo.reset()  # dynamo reuses another test's graphs of the same block code and shapes, and the warm-up would compile nothing
    scenarios = "lite eager,pro eager,lite eager x3,lite compiled"
    result = main(["--out", str(tmp_path), *ARGS, "--scenarios", scenarios])
    assert json.loads((tmp_path / RESULT_FILE).read_text()) == json.loads(json.dumps(result))
    assert list(result["scenarios"]) == scenarios.split(",")
    frames = round(1.5 * 25)  # each session renders its 1.5 s of speech whole
    for name, record in result["scenarios"].items():
        assert record["status"] == "ok" and record["size"] == [64, 64], (name, record)
        assert [s["frames"] for s in record["per_session"]] == [frames] * record["sessions"], name
        assert record["frames"] == frames * record["sessions"] and record["aggregate_fps"] > 0, name
        assert record["ttff_s"] == max(s["ttff_s"] for s in record["per_session"]), name
    assert result["scenarios"]["lite eager x3"]["sessions"] == 3
    assert result["warm_ups"]["lite compiled"]["compile_s"] > 0  # the warm-up chunk compiles the DiT's blocks...
    assert result["scenarios"]["lite compiled"]["compile_s"] == 0  # ...so the measured render compiles nothing
    assert result["scenarios"]["lite eager"]["compile_s"] is None and result["warm_ups"]["lite eager"]["compile_s"] is None


def test_no_scenario_starts_after_the_budget(tmp_path: Path) -> None:
    result = main(["--out", str(tmp_path), *ARGS, "--scenarios", "pro eager,lite compiled", "--budget-s", "0"])
    assert {name: r["status"] for name, r in result["scenarios"].items()} == {"pro eager": "skipped", "lite compiled": "skipped"}
    assert "time budget of 0 s spent" in result["scenarios"]["pro eager"]["reason"] and result["warm_ups"] == {}


def test_a_failing_scenario_is_reported_and_the_next_one_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run = gpu_bench.run_scenario

    def breaks_compiled(family: FlashHeadFamily, scenario: gpu_bench.Scenario, *args: Any) -> dict[str, Any]:
        if scenario.compiled:
            raise RuntimeError("no kernel for this shape\n(details)")
        return run(family, scenario, *args)

    monkeypatch.setattr(gpu_bench, "run_scenario", breaks_compiled)
    result = main(["--out", str(tmp_path), *ARGS, "--scenarios", "lite compiled,lite compiled x2"])
    assert result["scenarios"]["lite compiled"] == {"status": "failed", "reason": "RuntimeError: no kernel for this shape"}
    assert result["scenarios"]["lite compiled x2"]["status"] == "failed" and "lite compiled" in result["warm_ups"]  # warmed once


def test_an_unknown_scenario_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--out", str(tmp_path), *ARGS, "--scenarios", "lite eager x4"])
    assert "--scenarios: unknown ['lite eager x4']" in capsys.readouterr().err
