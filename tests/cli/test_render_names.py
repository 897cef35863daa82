"""Names on the command line say what they are: --x264-preset (the old --preset still works and says so), an --out name
that matches the file written, and a closing line that names every file the render wrote."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from avatarstream.cli.main import build_parser, main
from sources.sine_files import write_sine

TINY = ["--model", "demo-tiny", "--no-progress", "--threads", "1"]


@pytest.mark.parametrize("command", ["render", "serve", "fleet"])
def test_x264_preset_and_its_old_name(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    parser = build_parser()
    assert parser.parse_args([command]).x264_preset == "veryfast"
    assert parser.parse_args([command, "--x264-preset", "fast"]).x264_preset == "fast"
    assert capsys.readouterr().err == ""
    assert parser.parse_args([command, "--preset", "slow"]).x264_preset == "slow"
    assert capsys.readouterr().err == "warning: --preset is now --x264-preset; the old name will go away\n"


def test_the_old_name_is_hidden_from_help(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["render", "--help"])
    shown = capsys.readouterr().out
    assert "--x264-preset NAME" in shown and "--preset" not in shown.replace("--x264-preset", "").replace("--model-preset", "")


def test_the_old_name_reaches_the_encoder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    audio = tmp_path / "a.wav"
    write_sine(audio, "pcm_s16le", 16000, 1, 0.3)
    assert main(["render", "--audio", str(audio), "--out", str(tmp_path / "o.mp4"), "--preset", "warp", *TINY]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("warning: --preset is now --x264-preset") and "'warp' is not an x264 preset" in err[-1]


@pytest.mark.parametrize("name", ["o.avi", "o.MKV", "o.webm", "o", "o.mp4.txt"])
def test_an_out_name_that_is_no_mp4_is_refused_before_anything_runs(tmp_path: Path, name: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["render", "--out", str(tmp_path / name), *TINY]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith(f"error: --out {tmp_path / name} ") and "is an MP4" in line and ".mp4 or .m4v" in line
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("name", ["o.mp4", "o.M4V"])
def test_mp4_names_are_taken(tmp_path: Path, name: str) -> None:
    audio = tmp_path / "a.wav"
    write_sine(audio, "pcm_s16le", 16000, 1, 0.3)
    assert main(["render", "--audio", str(audio), "--out", str(tmp_path / name), *TINY]) == 0
    assert (tmp_path / name).stat().st_size > 0


def test_the_closing_line_names_every_file_written(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    audio = tmp_path / "a.wav"
    write_sine(audio, "pcm_s16le", 16000, 1, 0.3)
    out, report, trace, hls = tmp_path / "o.mp4", tmp_path / "r.json", tmp_path / "t.json", tmp_path / "hls"
    args = ["--audio", str(audio), "--out", str(out), "--report", str(report), "--trace", str(trace), "--hls", str(hls)]
    assert main(["render", *args, *TINY]) == 0
    (line,) = [line for line in capsys.readouterr().out.splitlines() if line.startswith("done")]
    assert line.startswith(f"done -> {out}, HLS {hls}, report {report}, trace {trace}: 8 frames")
    assert json.loads(report.read_text())["frames"] == 8 and trace.is_file() and (hls / "index.m3u8").is_file()
    assert main(["render", "--audio", str(audio), "--out", "-", "--hls", str(tmp_path / "only"), *TINY]) == 0
    (line,) = [line for line in capsys.readouterr().out.splitlines() if line.startswith("done")]
    assert line.startswith(f"done -> HLS {tmp_path / 'only'}: ")
