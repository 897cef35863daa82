"""Every FlashHead golden case (Pro and Lite) within the set's own tolerances (SoulX-FlashHead's reference at tiny size).

``avatarstream parity`` finds the family by the set's reference repository and runs its registered cases (the set's
``cases`` are descriptions of what each checks).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

from avatarstream.cli.main import main
from avatarstream.parity.checks import Check

GOLDEN = Path(__file__).parents[1] / "fixtures" / "flashhead-tiny"


@pytest.fixture
def one_thread() -> Iterator[None]:
    """Tiny tensors: one thread is fastest, and on a busy machine many threads are far slower (the render tests pass threads=1)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.mark.usefixtures("one_thread")
def test_every_case_of_both_variants_passes_within_the_sets_own_tolerances(tmp_path: Path) -> None:
    spec = json.loads((GOLDEN / "golden.json").read_text())
    out = tmp_path / "parity.json"
    assert main(["parity", str(GOLDEN), "--json", str(out)]) == 0
    rows = json.loads(out.read_text())
    failed = [r for r in rows if not r["passed"]]
    assert not failed, failed
    seen = {r["case"] for r in rows}
    by_name = {f"{r['case']}/{r['name']}": Check(r["case"], r["name"], r["max_abs_err"], r["tolerance"], r.get("bound", "max")) for r in rows}
    tolerance = spec["tolerance"]
    for variant in ("pro", "lite"):
        assert {f"dit_{variant}", f"vae_{variant}", f"stream_{variant}"} <= set(seen)
        assert by_name[f"dit_{variant}/velocity_0"].tolerance == tolerance["dit_velocity_atol"]
        assert by_name[f"stream_{variant}/timesteps"].max_abs_err == 0.0
        assert by_name[f"stream_{variant}/teacher-forced velocities (every step)"].tolerance == tolerance["per_step_velocity_atol"]
        assert by_name[f"stream_{variant}/re-noising updates (stored v and eps)"].tolerance == tolerance["sampler_update_atol"]
        assert by_name[f"stream_{variant}/c2_x0 (free-running, stored draws)"].tolerance == tolerance["x0_free_running_atol"]
        assert by_name[f"stream_{variant}/frames_u8 PSNR (dB)"].max_abs_err >= 60
    assert by_name["vae_lite/latent_sample_seed1234"].passed and by_name["stream_pro/c2_motion_latents_out"].passed
    assert all(by_name[f"audio/c{c}_features"].max_abs_err <= tolerance["features_atol"] for c in range(3))
