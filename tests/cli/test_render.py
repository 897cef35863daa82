"""`avatarstream render` end to end with the tiny demo model: real audio files in, a real MP4 out."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from pathlib import Path

import pytest

from avatarstream.cli.main import main
from publish.mp4_checks import decode
from sources.sine_files import write_sine

TINY = ["--model", "demo-tiny", "--no-progress"]


def render(tmp_path: Path, audio: Path, *extra: str) -> tuple[Path, dict]:
    out, report = tmp_path / "out.mp4", tmp_path / "report.json"
    code = main(["render", "--audio", str(audio), "--out", str(out), "--report", str(report), *TINY, *extra])
    assert code == 0
    return out, json.loads(report.read_text())


@pytest.mark.parametrize(
    ("name", "codec", "rate", "channels", "seconds"),
    [
        ("speech.wav", "pcm_s16le", 16000, 1, 3.0),
        ("odd.wav", "pcm_f32le", 44100, 2, 1.37),
        ("speech.mp3", "mp3", 44100, 2, 2.0),
        ("speech.flac", "flac", 48000, 1, 2.5),
        ("speech.ogg", "libopus", 48000, 2, 1.5),
        ("short.wav", "pcm_s16le", 22050, 1, 0.2),
    ],
)
def test_mp4_has_exact_frames_and_audio(tmp_path: Path, name: str, codec: str, rate: int, channels: int, seconds: float) -> None:
    audio = tmp_path / name
    write_sine(audio, codec, rate, channels, seconds)
    out, report = render(tmp_path, audio)
    video = decode(out)
    expected = round(report["duration_s"] * 25)
    assert abs(report["duration_s"] - seconds) < 0.08  # lossy codecs pad a little
    assert report["frames"] == expected == len(video.frames)
    assert (video.width, video.height) == (64, 64)
    assert video.video_codec == "h264" and video.average_rate == 25
    assert video.audio_codec == "aac"
    assert abs(video.audio_duration_s - expected / 25) <= 1 / 25 + 0.03  # AAC priming / last-frame padding


def test_report_fields_and_chunk_records(tmp_path: Path) -> None:
    audio = tmp_path / "a.wav"
    write_sine(audio, "pcm_s16le", 16000, 1, 2.2)
    _, report = render(tmp_path, audio, "--chunk-frames", "8", "--interp-frames", "2")
    for key in ("ttff_s", "frames", "duration_s", "fps_out", "realtime_factor", "peak_rss_bytes", "peak_device_bytes", "stage_seconds", "chunks"):
        assert key in report
    assert report["frames"] == 55 and report["peak_device_bytes"] is None
    assert report["ttff_s"] > 0 and report["realtime_factor"] > 0 and report["peak_rss_bytes"] > 0
    assert set(report["stage_seconds"]) == {"reference_encode", "text_encode", "context_gen", "audio_to_video", "super_resolution", "decode"}
    names = [f"{c['kind']}{c['index']}" for c in report["chunks"]]
    assert names == ["N0", "N1", "I0", "N2", "I1", "N3", "I2", "N4", "I3", "N5", "I4", "N6", "I5"]
    spans = sorted(tuple(c["timeline"]) for c in report["chunks"])
    assert spans[0][0] == 0 and spans[-1][1] == 55
    assert all(a[1] == b[0] for a, b in itertools.pairwise(spans))


def test_interpolation_off_runs_only_n_chunks(tmp_path: Path) -> None:
    audio = tmp_path / "a.wav"
    write_sine(audio, "pcm_s16le", 16000, 1, 1.0)
    _, report = render(tmp_path, audio, "--chunk-frames", "8", "--interp-frames", "0")
    assert [c["kind"] for c in report["chunks"]] == ["N"] * 4
    assert [c["timeline"] for c in report["chunks"]] == [[0, 8], [8, 16], [16, 24], [24, 25]]


def test_trace_has_one_span_per_stage_per_chunk(tmp_path: Path) -> None:
    audio, trace = tmp_path / "a.wav", tmp_path / "trace.json"
    write_sine(audio, "pcm_s16le", 16000, 1, 1.0)
    _, report = render(tmp_path, audio, "--trace", str(trace), "--chunk-frames", "8", "--interp-frames", "2")
    events = [e for e in json.loads(trace.read_text()) if e["ph"] == "X"]
    a2v = [e["args"]["chunk"] for e in events if e["name"] == "audio_to_video"]
    assert a2v == [f"{c['kind']}{c['index']}" for c in report["chunks"]]
    assert all(e["dur"] >= 0 and "ts" in e for e in events)


def test_same_seed_same_video_other_seed_differs(tmp_path: Path) -> None:
    audio = tmp_path / "a.wav"
    write_sine(audio, "pcm_s16le", 16000, 1, 0.6)
    first = decode(render(tmp_path / "a", audio, "--seed", "3")[0]).frames
    again = decode(render(tmp_path / "b", audio, "--seed", "3")[0]).frames
    other = decode(render(tmp_path / "c", audio, "--seed", "4")[0]).frames
    assert all((x == y).all() for x, y in zip(first, again, strict=True))
    assert any((x != y).any() for x, y in zip(first, other, strict=True))


def test_cli_process_runs_and_reports(tmp_path: Path) -> None:
    """The installed console script, as a user runs it."""
    audio = tmp_path / "a.wav"
    write_sine(audio, "pcm_s16le", 16000, 1, 1.0)
    exe = Path(sys.executable).with_name("avatarstream")
    result = subprocess.run(
        [str(exe), "render", "--audio", str(audio), "--out", str(tmp_path / "o.mp4"), *TINY], check=False, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr
    assert "time to first frame" in result.stdout and "real-time factor" in result.stdout
    assert len(decode(tmp_path / "o.mp4").frames) == 25


def test_random_weights_say_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    audio = tmp_path / "a.wav"
    write_sine(audio, "pcm_s16le", 16000, 1, 0.5)
    render(tmp_path, audio)
    assert "random weights" in capsys.readouterr().err
    code = main(["render", "--audio", str(audio), "--out", str(tmp_path / "demo.mp4"), "--no-progress", "--threads", "1"])
    assert code == 0 and "random weights" not in capsys.readouterr().err  # the bundled demo weights are trained
