"""Bad input gets one clear line and a non-zero exit code, never a traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from avatarstream.cli.main import main
from sources.sine_files import write_sine

TINY = ["--model", "demo-tiny", "--no-progress"]


@pytest.fixture
def good_audio(tmp_path: Path) -> Path:
    path = tmp_path / "ok.wav"
    write_sine(path, "pcm_s16le", 16000, 1, 0.5)
    return path


def run_cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(["render", *TINY, *args])
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return code, err


def test_missing_audio(tmp_path: Path, capsys) -> None:
    code, err = run_cli(["--audio", str(tmp_path / "nope.wav"), "--out", str(tmp_path / "o.mp4")], capsys)
    assert code == 2 and "audio file not found" in err


def test_corrupt_audio(tmp_path: Path, capsys) -> None:
    bad = tmp_path / "bad.wav"
    bad.write_text("this is not audio at all " * 50)
    code, err = run_cli(["--audio", str(bad), "--out", str(tmp_path / "o.mp4")], capsys)
    assert code == 2 and "cannot read audio" in err and "WAV, MP3, FLAC or OGG" in err


def test_zero_length_audio(tmp_path: Path, capsys) -> None:
    empty = tmp_path / "empty.wav"
    write_sine(empty, "pcm_s16le", 16000, 1, 0.0)
    code, err = run_cli(["--audio", str(empty), "--out", str(tmp_path / "o.mp4")], capsys)
    assert code == 2 and "zero length" in err


def test_reference_not_an_image(tmp_path: Path, good_audio: Path, capsys) -> None:
    fake = tmp_path / "face.png"
    fake.write_text("not a picture")
    code, err = run_cli(["--audio", str(good_audio), "--reference", str(fake), "--out", str(tmp_path / "o.mp4")], capsys)
    assert code == 2 and "cannot read reference" in err and "PNG or JPEG" in err


@pytest.mark.parametrize(
    ("option", "needle"),
    [
        (["--chunk-frames", "-4"], "--chunk-frames"),
        (["--chunk-frames", "8", "--interp-frames", "8"], "must be 9 or more"),
        (["--chunk-frames", "2"], "--chunk-frames 2 is too short: with --interp-frames 3 and the model's 2 motion frames it must be 4 or more"),
        (["--device", "tpu"], "unknown device 'tpu'"),
        (["--steps", "0"], "invalid sampler setting"),
        (["--seed", "-1"], "--seed must be 0 or more"),
    ],
)
def test_nonsense_option_values(tmp_path: Path, good_audio: Path, capsys, option: list[str], needle: str) -> None:
    code, err = run_cli(["--audio", str(good_audio), "--out", str(tmp_path / "o.mp4"), *option], capsys)
    assert code == 2 and needle in err
    assert not (tmp_path / "o.mp4").exists(), "no output is started for a rejected option"


def test_unwritable_output(tmp_path: Path, good_audio: Path, capsys) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    code, err = run_cli(["--audio", str(good_audio), "--out", str(blocker / "o.mp4")], capsys)
    assert code != 0 and "cannot write output" in err


def test_subprocess_exit_code_and_single_line(tmp_path: Path) -> None:
    exe = Path(sys.executable).with_name("avatarstream")
    result = subprocess.run([str(exe), "render", "--audio", str(tmp_path / "missing.mp3"), *TINY], check=False, capture_output=True, text=True, timeout=120)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [f"error: audio file not found: {tmp_path / 'missing.mp3'}"]
