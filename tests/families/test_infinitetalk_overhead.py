"""The pipeline against a hand-written loop of the same infinitetalk networks: identical frames, little time outside them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from avatarstream.cli.main import main
from avatarstream.families.infinitetalk.layout import WeightsLayout


@pytest.fixture
def one_thread():  # tiny convolutions on two contending threads run ten times slower than on one
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.mark.parametrize("motion", ["reencode", "latent"])
def test_pipeline_frames_equal_the_plain_loop(tiny_original: WeightsLayout, tmp_path: Path, motion: str, one_thread: None) -> None:
    args = ["bench", "--model", "infinitetalk", "--weights", str(tiny_original.base.parent), "--scenario", "overhead", "--seconds", "4", "--repeats", "1",
            "--model-preset", "flashtalk", "--size", "32x32", "--motion", motion, "--out", str(tmp_path)]  # fmt: skip
    assert main(args) == 0
    result = json.loads((tmp_path / "overhead.json").read_text())
    assert result["identical_frames"] is True
    assert result["loop_outside_stages_pct"] <= 2.0
