"""``avatarstream parity`` on the FlashVSR (v1) golden set made with the reference (OpenImagingLab/FlashVSR): the set finds
the flashvsr upscaler by its reference repository, and every case passes within its own tolerances."""

from __future__ import annotations

import json
from pathlib import Path

from avatarstream.cli.main import main

GOLDEN = Path(__file__).parents[1] / "fixtures" / "flashvsr-tiny"


def test_every_case_passes_within_the_sets_own_tolerances(tmp_path: Path) -> None:
    out = tmp_path / "parity.json"
    assert main(["parity", str(GOLDEN), "--json", str(out)]) == 0
    rows = json.loads(out.read_text())
    spec = json.loads((GOLDEN / "golden.json").read_text())
    assert {r["case"] for r in rows} == set(spec["cases"])
    failed = [r for r in rows if not r["passed"]]
    assert not failed, failed
    by_name = {f"{r['case']}/{r['name']}": r for r in rows}
    expected = {
        "stream/hr upscale sha256", "stream/c0_block_masks", "stream/c2_v (teacher-forced)", "stream/c2 cache k appended, layer 1",
        "stream/x0_latents", "stream/decoded_raw_float frame 36", "stream/output_float frame 36", "stream/uint8 max LSB",
        "stream/uint8 worst frame PSNR dB", "stream/full mode output_float", "stream/frames out = frames in",
        "dit/block_masks", "dit/v", "lq_proj/out_group1", "tcdecoder/frames, latent frame by latent frame", "vae/video",
    }  # fmt: skip
    assert expected <= set(by_name)
    stream = spec["cases"]["stream"]["tolerance"]
    assert by_name["stream/c2_v (teacher-forced)"]["tolerance"] == stream["c_v"]
    assert by_name["stream/uint8 worst frame PSNR dB"]["tolerance"] == stream["output_u8"]["min_psnr_db_all_frames"]
    assert by_name["dit/v"]["tolerance"] == spec["cases"]["dit"]["tolerance"]["v"]
    assert by_name["vae/video"]["tolerance"] == spec["cases"]["vae"]["tolerance"]
    assert by_name["dit/block_masks"]["tolerance"] == 0.0
