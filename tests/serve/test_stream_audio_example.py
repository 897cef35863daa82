"""examples/stream_audio.py against a real server: the saved MP4 holds the whole speech, last words included (the example
ends the session with the socket's end control, after its last piece of speech, and the session speaks its queue out),
and its refusals are one line each."""

from __future__ import annotations

import os
import subprocess
import sys
import wave
from pathlib import Path

import httpx
import numpy as np
from serve_harness import TOKEN, running_server, s16, speech

from avatarstream.benchmarks.local_server import free_port
from mp4_checks import decode

EXAMPLE = Path(__file__).parents[2] / "examples" / "stream_audio.py"
SPEECH_S = 3.0


def run_example(*args: str, token: str | None = TOKEN) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "AVATARSTREAM_TOKEN"} | ({"AVATARSTREAM_TOKEN": token} if token else {})
    return subprocess.run([sys.executable, str(EXAMPLE), *args], check=False, capture_output=True, text=True, env=env, timeout=120)


def write_stereo_wav(path: Path, seconds: float, rate: int) -> None:
    """Speech at an odd rate in two channels: the example sends it as it is, the server resamples."""
    mono = s16(speech(seconds, rate))
    stereo = np.repeat(np.frombuffer(mono, "<i2")[:, None], 2, axis=1)
    with wave.open(str(path), "wb") as out:
        out.setnchannels(2)
        out.setsampwidth(2)
        out.setframerate(rate)
        out.writeframes(stereo.tobytes())


def sounding_span_s(samples: np.ndarray, rate: int, fps: float) -> float:
    """From the first to the last frame-long stretch of the sound track that is not silence (idle is silence)."""
    step = round(rate / fps)
    mono = samples.mean(axis=0)
    frames = mono[: mono.size // step * step].reshape(-1, step)
    loud = np.flatnonzero(np.sqrt((frames**2).mean(axis=1)) > 1e-3)
    return (loud[-1] - loud[0] + 1) / fps if loud.size else 0.0


def test_example_streams_a_wav_and_saves_the_whole_speech(tmp_path: Path) -> None:
    """Sent as fast as the server takes it into a queue of one second: the socket stops reading while the queue is full, so
    the last pieces are still on their way when the example ends the session, and the end must come after them."""
    clip, out = tmp_path / "speech.wav", tmp_path / "avatar.mp4"
    write_stereo_wav(clip, SPEECH_S, 22050)
    with running_server(tmp_path, token=TOKEN, max_queued_audio_s=1.0) as base:
        done = run_example(str(clip), "--fast", "--server", base, "--out", str(out), "--model-options", '{"avatar": 3}')
    print(done.stdout, done.stderr)
    assert done.returncode == 0, done.stderr
    assert f"saved {out}" in done.stdout
    video = decode(out)
    fps = float(video.average_rate)
    assert len(video.frames) == round(video.video_duration_s * fps)
    assert video.video_duration_s >= SPEECH_S - 2 / fps
    spoken = sounding_span_s(video.audio, video.audio_rate, fps)
    print(f"video {video.video_duration_s:.3f} s at {fps} fps, speech heard for {spoken:.3f} s of {SPEECH_S} s sent")
    assert abs(spoken - SPEECH_S) <= 2 / fps  # all of it, the last words too


def test_example_refusals_are_one_line(tmp_path: Path) -> None:
    clip = tmp_path / "speech.wav"
    write_stereo_wav(clip, 0.5, 16000)
    too_low = tmp_path / "phone.wav"
    write_stereo_wav(too_low, 0.5, 4000)  # below the socket's 8000 Hz: refused once the session is open
    not_wav = tmp_path / "notes.wav"
    not_wav.write_text("not audio")
    with running_server(tmp_path, token=TOKEN) as base:
        cases = {
            "refused the token": run_example(str(clip), "--server", base, token="wrong-token-0123456789"),
            "audio socket: the server answered 422": run_example(str(too_low), "--server", base),
            "is not a PCM WAV file": run_example(str(not_wav), "--server", base),
            "cannot reach": run_example(str(clip), "--server", f"http://127.0.0.1:{free_port()}"),
        }
        assert httpx.get(f"{base}/healthz").json()["sessions"] == 0  # the refused session was closed, not left to idle
    for expected, done in cases.items():
        assert done.returncode == 1, done.stderr
        assert done.stderr.startswith("stream_audio: ") and expected in done.stderr, done.stderr
        assert done.stderr.count("\n") == 1, done.stderr  # no traceback
