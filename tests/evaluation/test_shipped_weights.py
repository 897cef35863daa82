"""The shipped demo weights load and animate a held-out avatar in sync with hidden seams (quick check), through
`avatarstream eval`."""

from __future__ import annotations

import argparse
import json
from importlib import resources

import pytest
import torch

from avatarstream.avatars.speech import espeak_available
from avatarstream.cli import eval as eval_cli
from avatarstream.families.registry import load_family

WEIGHTS = resources.files("avatarstream") / "assets" / "demo"


def test_shipped_weights_load_and_are_small() -> None:
    family = load_family("demo", str(WEIGHTS))
    total = sum(p.stat().st_size for p in WEIGHTS.iterdir() if p.name.endswith(".safetensors"))
    assert total <= 25 * 2**20
    assert family.config.image_size == 256


@pytest.mark.skipif(not espeak_available(), reason="espeak-ng not installed (scripts/system-deps.sh installs it)")
def test_eval_on_one_held_out_clip_is_in_sync(tmp_path) -> None:
    threads = torch.get_num_threads()  # --threads 1 sets it for the process; give it back afterwards
    try:
        _eval_one_clip(tmp_path)
    finally:
        torch.set_num_threads(threads)


def _eval_one_clip(tmp_path) -> None:
    parser = argparse.ArgumentParser()
    eval_cli.add_parser(parser.add_subparsers())
    args = parser.parse_args(
        [
            "eval",
            "--weights",
            str(WEIGHTS),
            "--out",
            str(tmp_path),
            "--device",
            "cpu",
            "--clips",
            "1",
            "--clip-seconds",
            "6",
            "--minutes",
            "0",
            "--threads",
            "1",
        ]
    )
    assert args.run(args) == 0
    results = json.loads((tmp_path / "eval.json").read_text())
    assert {"seam_ratio_with_i_chunks", "seam_ratio_without_i_chunks", "speed_short_clips"} <= set(results)
    assert (tmp_path / "eval-lipsync.png").stat().st_size > 0 and (tmp_path / "eval-seams.png").stat().st_size > 0
    print(
        f"\nlip sync {results['lip_sync_correlation']}, seam ratio {results['seam_ratio_with_i_chunks']}"
        f" with I-chunks, {results['seam_ratio_without_i_chunks']} without"
    )
    assert results["lip_sync_correlation"] > 0.6
    assert results["seam_ratio_with_i_chunks"] <= min(1.2, results["seam_ratio_without_i_chunks"])  # I-chunks hide the seams
