"""The cascade made real: a family's frames through the tiny FlashVSR checkpoint, 4x, every frame, reproducibly.

demo-tiny (64x64) -> FlashVSR (tiny mode) -> 256x256. The frame count is the
family's own, the same seed gives the same video, another seed another, the
model hand-over is in the report's stage switches, and two minutes peak in
host memory where thirty seconds do.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from long_render import assert_no_growth, render_report

from avatarstream.cli.main import main
from avatarstream.families.assemble import build_pipeline
from avatarstream.families.flashvsr.tiny import write_tiny_checkpoint
from avatarstream.families.registry import Upscale, load_family
from avatarstream.runtime.cpu_threads import set_threads
from avatarstream.sources.pcm import PcmBlock
from sources.sine_files import write_sine

RATE = 16000


@pytest.fixture(scope="module")
def tiny_flashvsr(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_tiny_checkpoint(tmp_path_factory.mktemp("tiny-flashvsr"), seed=3)


def _speech(seconds: float) -> list[PcmBlock]:
    t = np.arange(int(seconds * RATE)) / RATE
    samples = (0.4 * np.sin(2 * np.pi * 180 * t) * (1 + np.sin(2 * np.pi * 2 * t))).astype(np.float32)[None]
    return [PcmBlock(samples[:, i : i + RATE // 5], RATE) for i in range(0, samples.shape[1], RATE // 5)]


def _frames(weights: Path | None, seconds: float, seed: int) -> np.ndarray:
    family = load_family("demo-tiny")
    if weights is not None:
        family = Upscale("flashvsr", weights).load(family, device=torch.device("cpu"))
    pipeline = build_pipeline(family, torch.device("cpu"))
    return np.concatenate([m.frames for m in pipeline.stream(_speech(seconds), family.reference(None), seed=seed)])


def test_every_frame_comes_out_4x_and_the_same_seed_gives_the_same_video(tiny_flashvsr: Path) -> None:
    set_threads(None, follow_machine=False)  # bit-identical runs: a thread count that follows the load could change the last bits
    plain = _frames(None, 2.3, seed=1)
    first, again, other = (_frames(tiny_flashvsr, 2.3, seed) for seed in (1, 1, 2))
    assert first.shape == (plain.shape[0], plain.shape[1] * 4, plain.shape[2] * 4, 3)  # 58 frames: 25 held, then 8s, the rest flushed
    np.testing.assert_array_equal(first, again)
    assert not np.array_equal(first, other)


def test_the_report_shows_the_model_hand_over_per_switch(tiny_flashvsr: Path, tmp_path: Path) -> None:
    speech, report = tmp_path / "speech.wav", tmp_path / "report.json"
    write_sine(speech, "pcm_s16le", RATE, 1, 2.0)
    args = ["render", "--model", "demo-tiny", "--audio", str(speech), "--out", str(tmp_path / "o.mp4"), "--report", str(report), "--no-progress",
            "--upscale", "flashvsr", "--upscale-weights", str(tiny_flashvsr), "--residency", "a2v_dit=offloaded,flashvsr_dit=offloaded"]  # fmt: skip
    assert main(args) == 0
    said = json.loads(report.read_text())
    assert said["frames"] == 50 and said["resolution"] == [256, 256]
    assert said["settings"]["upscale"]["upscaler"] == "flashvsr" and said["runtime"]["policies"]["flashvsr_dit"] == "offloaded"
    switches = said["stage_switches"]
    assert switches["decode->flashvsr"]["count"] >= 6 and "flashvsr->context_gen" in switches
    assert said["stage_seconds"]["flashvsr"] > 0


def test_two_minutes_of_cascade_peak_like_thirty_seconds(tiny_flashvsr: Path, tmp_path: Path) -> None:
    upscale = ["--upscale", "flashvsr", "--upscale-weights", str(tiny_flashvsr), "--x264-preset", "ultrafast"]
    short = render_report("demo-tiny", None, tmp_path, 30, upscale)
    long = render_report("demo-tiny", None, tmp_path, 120, upscale)
    assert short["frames"] == 750 and long["frames"] == 3000 and long["resolution"] == [256, 256]
    ratio = long["peak_rss_bytes"] / short["peak_rss_bytes"]
    print(f"\npeak RSS: 30 s {short['peak_rss_bytes'] / 2**20:.1f} MiB, 120 s {long['peak_rss_bytes'] / 2**20:.1f} MiB ({100 * (ratio - 1):+.2f} %)")
    assert ratio < 1.02, f"peak RSS grew {100 * (ratio - 1):.1f}% for 4x the audio"
    assert_no_growth(long)


def test_flashhead_then_flashvsr(tiny_flashhead: Path, tiny_flashvsr: Path, tmp_path: Path) -> None:
    """The family built for one GPU, cascaded: FlashHead Pro at 64x64, then FlashVSR to 256x256, every frame."""
    speech, report = tmp_path / "speech.wav", tmp_path / "report.json"
    write_sine(speech, "pcm_s16le", RATE, 1, 1.5)
    args = ["render", "--model", "flashhead", "--weights", str(tiny_flashhead), "--size", "64x64", "--audio", str(speech), "--out", str(tmp_path / "o.mp4"),
            "--report", str(report), "--no-progress", "--upscale", "flashvsr", "--upscale-weights", str(tiny_flashvsr)]  # fmt: skip
    assert main(args) == 0
    said = json.loads(report.read_text())
    assert said["frames"] == 38 and said["resolution"] == [256, 256] and said["stage_seconds"]["flashvsr"] > 0
