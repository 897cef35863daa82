"""``avatarstream parity`` on the LiveAvatar golden set made with the reference (Alibaba-Quark/LiveAvatar)."""

from __future__ import annotations

import json
from pathlib import Path

from avatarstream.cli.main import main

GOLDEN = Path(__file__).parents[1] / "fixtures" / "liveavatar-tiny"


def test_every_case_passes_within_the_sets_own_tolerances(tmp_path: Path) -> None:
    out = tmp_path / "parity.json"
    assert main(["parity", str(GOLDEN), "--json", str(out)]) == 0
    rows = json.loads(out.read_text())
    spec = json.loads((GOLDEN / "golden.json").read_text())
    assert {r["case"] for r in rows} == set(spec["cases"]) == {"dit", "sampler", "audio", "vae", "lora"}
    failed = [r for r in rows if not r["passed"]]
    assert not failed, failed
    by_name = {f"{r['case']}/{r['name']}": r for r in rows}
    expected = {
        "dit/velocity", "dit/cache keys after", "dit/velocity, sink offset 4", "dit/velocity, sink offset 30",
        "sampler/sink0 keys", "sampler/sink1 keys", "sampler/c0 teacher-forced velocities", "sampler/c1_x0", "sampler/video frames",
        "audio/hidden_states_50hz", "audio/audio_emb", "audio/bucket_indices", "vae/video_streamed", "lora/merge blocks.0.self_attn.q",
    }  # fmt: skip
    assert expected <= set(by_name)
    assert by_name["dit/velocity"]["tolerance"] == spec["cases"]["dit"]["tolerance"]["atol"]
    assert by_name["sampler/video frames"]["tolerance"] == spec["cases"]["sampler"]["tolerance"]["video_atol"]
