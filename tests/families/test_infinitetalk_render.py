"""``avatarstream render --model infinitetalk`` on the tiny checkpoint: a real MP4 with exact frames and A/V sync."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from avatarstream.cli.main import main
from avatarstream.errors import InputError, PipelineGraphError
from avatarstream.families.assemble import build_pipeline
from avatarstream.families.infinitetalk.layout import WeightsLayout
from avatarstream.families.registry import load_family
from avatarstream.pipeline.pipeline import Pipeline
from publish.mp4_checks import decode
from sources.sine_files import write_sine

FAST = ["--model-preset", "flashtalk", "--size", "64x48", "--threads", "1", "--no-progress"]  # tiny convolutions: one thread is fastest


def _render(weights: Path, audio: Path, out_dir: Path, *extra: str) -> tuple[Path, dict]:
    out, report = out_dir / "out.mp4", out_dir / "report.json"
    args = ["render", "--model", "infinitetalk", "--weights", str(weights), "--audio", str(audio), "--out", str(out), "--report", str(report), *FAST, *extra]
    assert main(args) == 0
    return out, json.loads(report.read_text())


@pytest.mark.parametrize("seconds", [0.3, 2.0, 3.37])
def test_mp4_has_exact_frames_and_audio(tiny_original: WeightsLayout, tmp_path: Path, seconds: float) -> None:
    audio = tmp_path / "speech.wav"
    write_sine(audio, "pcm_s16le", 16000, 1, seconds)
    out, report = _render(tiny_original.base.parent, audio, tmp_path)
    video = decode(out)
    expected = round(seconds * 25)
    assert report["frames"] == expected == len(video.frames)
    assert (video.width, video.height) == (64, 48) and video.average_rate == 25 and video.audio_codec == "aac"
    assert abs(video.audio_duration_s - expected / 25) <= 1 / 25 + 0.03
    assert set(report["stage_seconds"]) == {"reference_encode", "prompt_encode", "context_gen", "audio_to_video", "decode"}  # no SR stage
    assert report["settings"]["steps"] == 4 and report["settings"]["chunk_frames"] == 33


def test_diffusers_layout_renders_the_same_frames(tiny_original: WeightsLayout, tiny_diffusers: WeightsLayout, tmp_path: Path) -> None:
    audio = tmp_path / "speech.wav"
    write_sine(audio, "pcm_s16le", 16000, 1, 1.5)
    frames = []
    for layout in (tiny_original, tiny_diffusers):
        (tmp_path / layout.layout).mkdir()
        out, _ = _render(layout.base.parent, audio, tmp_path / layout.layout, "--motion", "latent")
        frames.append(np.stack(decode(out).frames))
    np.testing.assert_array_equal(frames[0], frames[1])


def test_bf16_weights_render(tiny_original: WeightsLayout, tmp_path: Path) -> None:
    """bf16 (the CUDA default) with the float32-kept tables: every stage must feed each network its own dtype."""
    audio = tmp_path / "speech.wav"
    write_sine(audio, "pcm_s16le", 16000, 1, 1.5)
    out, report = _render(tiny_original.base.parent, audio, tmp_path, "--dtype", "bf16")
    assert report["frames"] == len(decode(out).frames) == 38


def test_stage_graph_is_checked_at_construction(tiny_original: WeightsLayout) -> None:
    family = load_family("infinitetalk", tiny_original.base.parent)
    pipeline = build_pipeline(family, torch.device("cpu"), {"preset": "flashtalk", "size": (64, 48)})
    without_prompts = [s for s in pipeline.stages if s.name != "prompt_encode"]
    with pytest.raises(PipelineGraphError, match="reads \\['text_context', 'text_context_null'\\] but nothing before it writes them"):
        Pipeline(without_prompts, pipeline.plan, pipeline.runtime, fps=25, model_sample_rate=16000, frames=pipeline.frames)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"chunk_frames": 80}, "must be 1 \\+ 4k video frames .* e.g. 81; got 80"),
        ({"chunk_frames": 33, "motion_frames": 33}, "must be fewer than --chunk-frames \\(33\\): with 33 motion frames, --chunk-frames can be 37, 41"),
        ({"interp_frames": 3}, "multiple of 4 below 72 \\(the new frames of a 81-frame chunk with 9 motion frames\\); got 3"),
        ({"size": (100, 48)}, "multiples of 16"),
        ({"preset": "fast"}, "--model-preset must be one of infinitetalk, flashtalk; got 'fast'"),
        ({"motion": "copy"}, "--motion must be one of reencode, latent; got 'copy'"),
        ({"steps": 0}, "steps must be at least 1"),
        ({"chunk_frames": 9, "motion_frames": 5}, "at least as many new frames as motion frames: with 5 motion frames, --chunk-frames can be 17, 21"),
        ({"audio_window_s": float("nan")}, "--audio-window must be a finite number, got nan"),
    ],
)
def test_bad_settings_are_one_clear_error(tiny_original: WeightsLayout, options: dict, message: str) -> None:
    family = load_family("infinitetalk", tiny_original.base.parent)
    with pytest.raises(InputError, match=message):
        build_pipeline(family, torch.device("cpu"), dict(**options))


def test_options_of_one_family_are_refused_by_the_other(tiny_original: WeightsLayout, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as refused:  # a usage error, told by the parser before anything loads
        main(["render", "--model", "demo-tiny", "--text-guidance", "2", "--out", str(tmp_path / "a.mp4")])
    assert refused.value.code == 2
    assert "the demo-tiny model has no use for --text-guidance, an option of infinitetalk" in capsys.readouterr().err
    with pytest.raises(SystemExit) as refused:
        main(["render", "--model", "infinitetalk", "--weights", str(tiny_original.base.parent), "--avatar", "3", *FAST, "--out", str(tmp_path / "b.mp4")])
    assert refused.value.code == 2
    assert "the infinitetalk model has no use for --avatar, an option of demo, demo-tiny" in capsys.readouterr().err
    assert main(["render", "--model", "infinitetalk", "--out", str(tmp_path / "c.mp4")]) == 2
    assert "needs --weights ROOT" in capsys.readouterr().err


def test_overlap_is_off_when_the_vae_serves_both_phases(tiny_original: WeightsLayout) -> None:
    family = load_family("infinitetalk", tiny_original.base.parent)
    pipeline = build_pipeline(family, torch.device("cpu"), {"preset": "flashtalk", "size": (32, 32)}, overlap=True)
    assert pipeline.overlap is False  # motion re-encoding (chunk phase) and decoding (final phase) both use the VAE
