"""FlashVSR (v1) against the golden set made with the reference (OpenImagingLab/FlashVSR), every case within its own tolerances."""

from __future__ import annotations

import json
from pathlib import Path

from avatarstream.families.flashvsr.parity import run_cases
from avatarstream.parity.fixture import GoldenSet

GOLDEN = Path(__file__).parents[1] / "fixtures" / "flashvsr-tiny"


def test_every_case_passes_within_the_sets_own_tolerances() -> None:
    spec = json.loads((GOLDEN / "golden.json").read_text())
    started: list[str] = []
    checks = run_cases(GoldenSet.open(GOLDEN), started.append)
    assert started == list(spec["cases"])
    assert {c.case for c in checks} == set(spec["cases"])
    failed = [c for c in checks if not c.passed]
    assert not failed, failed
    by_name = {f"{c.case}/{c.name}": c for c in checks}
    expected = {
        "stream/hr upscale sha256", "stream/c0_block_masks", "stream/c2_v (teacher-forced)", "stream/c2 cache k appended, layer 1",
        "stream/x0_latents", "stream/decoded_raw_float frame 36", "stream/output_float frame 36", "stream/uint8 max LSB",
        "stream/uint8 worst frame PSNR dB", "stream/full mode output_float", "stream/frames out = frames in",
        "dit/block_masks", "dit/v", "lq_proj/out_group1", "tcdecoder/frames, latent frame by latent frame", "vae/video",
    }  # fmt: skip
    assert expected <= set(by_name)
    stream = spec["cases"]["stream"]["tolerance"]
    assert by_name["stream/c2_v (teacher-forced)"].tolerance == stream["c_v"]
    assert by_name["stream/uint8 worst frame PSNR dB"].tolerance == stream["output_u8"]["min_psnr_db_all_frames"]
    assert by_name["dit/v"].tolerance == spec["cases"]["dit"]["tolerance"]["v"]
    assert by_name["vae/video"].tolerance == spec["cases"]["vae"]["tolerance"]
    assert by_name["dit/block_masks"].tolerance == 0.0
