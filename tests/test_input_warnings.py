"""Warnings about the inputs reach the user: once each on the CLI's stderr, in the report's JSON, with advice that works.

(The server's side, the session's JSON and its log lines, is in tests/serve/test_warnings_served.py.)
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

import avatarstream
from avatarstream.cli.main import main
from avatarstream.families.demo_reference import PHOTO_NOTE
from avatarstream.families.infinitetalk.layout import WeightsLayout
from avatarstream.input_warnings import Warnings, audio_rate_warning, collecting
from avatarstream.sources.pcm import PcmBlock
from avatarstream.sources.warn import warn
from sources.sine_files import write_sine

RANDOM = "this model has random weights"
FAST = ["--no-progress", "--threads", "1"]


def _photo(path: Path) -> Path:
    """A picture that is no procedural avatar (blocks of noise, as tests/avatars tells them apart)."""
    rng = np.random.default_rng(0)
    pixels = np.clip(np.kron(rng.uniform(0, 255, (16, 16, 3)), np.ones((16, 16, 1))) + rng.normal(0, 4, (256, 256, 3)), 0, 255)
    Image.fromarray(pixels.astype(np.uint8)).save(path)
    return path


def _warnings(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("warning: ")]


def test_the_cli_prints_each_warning_once_and_the_report_lists_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    audio = tmp_path / "a.wav"
    write_sine(audio, "pcm_s16le", 8000, 1, 0.5)  # below the model's 16 kHz
    report = tmp_path / "r.json"
    code = main(["render", "--model", "demo-tiny", "--audio", str(audio), "--out", str(tmp_path / "o.mp4"), "--report", str(report), *FAST])
    assert code == 0
    printed = _warnings(capsys.readouterr().err)
    listed = json.loads(report.read_text())["warnings"]
    assert [f"warning: {text}" for text in listed] == printed  # each once, in the order found
    assert len(listed) == 2 and listed[0].startswith(RANDOM) and "seed 0" in listed[0]
    assert listed[1] == audio_rate_warning(8000, 16000)
    assert "8000 Hz" in listed[1] and "16000 Hz or more" in listed[1]


def test_a_clean_run_has_no_warnings(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    audio = tmp_path / "a.wav"
    write_sine(audio, "pcm_s16le", 22050, 1, 0.5)  # above the model's rate: resampling down loses nothing it hears
    result = avatarstream.render(audio, out=tmp_path / "o.mp4", model="demo", threads=1)
    assert result.report["warnings"] == []
    assert _warnings(capsys.readouterr().err) == []


def test_a_photo_on_the_demo_weights_says_what_to_use(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    audio = tmp_path / "a.wav"
    write_sine(audio, "pcm_s16le", 16000, 1, 0.4)
    result = avatarstream.render(audio, _photo(tmp_path / "face.png"), out=tmp_path / "o.mp4", model="demo", threads=1, report=tmp_path / "r.json")
    assert result.report["warnings"] == [PHOTO_NOTE] == json.loads((tmp_path / "r.json").read_text())["warnings"]
    assert "--avatar SEED" in PHOTO_NOTE and "--model infinitetalk --weights ROOT" in PHOTO_NOTE  # advice that works
    assert _warnings(capsys.readouterr().err) == [f"warning: {PHOTO_NOTE}"]


def test_a_live_source_is_checked_with_its_first_block(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    blocks = [PcmBlock(np.zeros((1, 800), np.float32), 8000) for _ in range(5)]
    result = avatarstream.render(iter(blocks), out=tmp_path / "o.mp4", model="demo-tiny", threads=1)
    assert result.report["warnings"][1:] == [audio_rate_warning(8000, 16000)]
    assert len(_warnings(capsys.readouterr().err)) == 2


def test_a_loaded_family_keeps_its_warnings_for_every_render(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    family = avatarstream.load_family("demo-tiny")
    assert capsys.readouterr().err == ""  # loading prints nothing: the render that uses it reports
    for i in range(2):
        result = avatarstream.render(out=tmp_path / f"{i}.mp4", model=family, threads=1)
        assert [w[: len(RANDOM)] for w in result.report["warnings"]] == [RANDOM]
        assert len(_warnings(capsys.readouterr().err)) == 1


def test_the_tiny_infinitetalk_checkpoint_says_its_weights_are_random(tiny_original: WeightsLayout, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    audio = tmp_path / "a.wav"
    write_sine(audio, "pcm_s16le", 16000, 1, 0.3)
    report = tmp_path / "r.json"
    args = ["render", "--model", "infinitetalk", "--weights", str(tiny_original.base.parent), "--audio", str(audio), "--out", str(tmp_path / "o.mp4")]
    assert main([*args, "--report", str(report), "--model-preset", "flashtalk", "--size", "64x48", *FAST]) == 0
    (text,) = json.loads(report.read_text())["warnings"]
    assert "weights are random" in text and "seed 7" in text and "make_tiny_checkpoint.py" in text and "--weights ROOT" in text
    assert _warnings(capsys.readouterr().err) == [f"warning: {text}"]


def test_an_adapter_without_the_mark_is_not_called_random(golden_dir: Path) -> None:
    from avatarstream.components.wan.layout import random_mark

    assert random_mark(golden_dir / "weights" / "InfiniteTalk" / "single" / "infinitetalk.safetensors") is None  # as the real download
    assert random_mark(golden_dir / "no-such-file.safetensors") is None


def test_warn_goes_to_the_collector_of_its_context_else_to_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    heard: list[str] = []
    found = Warnings(on_new=heard.append)
    with collecting(found):
        warn("a")
        warn("b")
        warn("a")
    warn("c")
    assert found.list() == ["a", "b"] == heard
    assert capsys.readouterr().err == "warning: c\n"
    assert audio_rate_warning(16000, 16000) is None and audio_rate_warning(48000, 16000) is None
