"""Nothing is lost: a render that fails or is stopped midway leaves a playable MP4."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from terminal import as_in_a_terminal

from avatarstream.cli.main import main
from publish.mp4_checks import decode
from sources.sine_files import write_sine

TINY = ["--model", "demo-tiny", "--no-progress"]


def wait_for_decoded_frames(trace: Path, proc: subprocess.Popen, timeout_s: float = 120) -> None:
    """Block until the trace shows frames were decoded (so the MP4 has content to keep)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        assert proc.poll() is None, "render ended before it could be interrupted"
        if trace.exists() and trace.read_text().count('"name": "decode"') >= 3:
            return
        time.sleep(0.05)
    raise AssertionError("no frames were decoded in time")


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_signal_midway_finalizes_the_mp4(tmp_path: Path, sig: signal.Signals, code: int) -> None:
    audio, out, trace = tmp_path / "long.wav", tmp_path / "out.mp4", tmp_path / "trace.json"
    write_sine(audio, "pcm_s16le", 16000, 1, 600.0)
    exe = Path(sys.executable).with_name("avatarstream")
    command = [str(exe), "render", *TINY, "--audio", str(audio), "--out", str(out), "--trace", str(trace)]
    proc = subprocess.Popen(as_in_a_terminal(command), stderr=subprocess.PIPE, text=True)
    try:
        wait_for_decoded_frames(trace, proc)
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == code, err
    assert "Traceback" not in err
    video = decode(out)
    assert 0 < len(video.frames) < 600 * 25
    assert abs(video.audio_duration_s - len(video.frames) / 25) <= 1 / 25 + 0.03
    json.loads(trace.read_text() + ("" if trace.read_text().rstrip().endswith("]") else "]"))


def test_audio_damaged_midway_keeps_what_was_rendered(tmp_path: Path, capsys) -> None:
    audio, out = tmp_path / "damaged.mp3", tmp_path / "out.mp4"
    write_sine(audio, "libmp3lame", 44100, 2, seconds=10.0)
    data = bytearray(audio.read_bytes())
    middle = len(data) // 2
    data[middle : middle + 5000] = np.random.default_rng(0).integers(0, 256, 5000, dtype=np.uint8).tobytes()
    audio.write_bytes(bytes(data))
    code = main(["render", *TINY, "--audio", str(audio), "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 2 and "is damaged after" in err and "Traceback" not in err
    frames = len(decode(out).frames)
    assert 25 < frames < 250, "the frames rendered before the damage are kept"
