"""`render --preview` goes on serving the finished stream after the render, until Ctrl-C."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from terminal import as_in_a_terminal

from avatarstream.benchmarks.local_server import free_port
from sources.sine_files import write_sine


def _render(tmp_path: Path, *extra: str) -> tuple[subprocess.Popen[str], str]:
    audio = tmp_path / "a.wav"
    write_sine(audio, "pcm_s16le", 16000, 1, 1.0)
    url = f"http://127.0.0.1:{free_port()}/"
    command = [sys.executable, "-m", "avatarstream.cli.main", "render", "--model", "demo-tiny", "--threads", "1", "--no-progress", "--audio", str(audio),
               "--out", "-", "--preview", url.removeprefix("http://").rstrip("/"), *extra]  # fmt: skip
    return subprocess.Popen(as_in_a_terminal(command), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True), url


def test_preview_outlives_the_render_until_ctrl_c(tmp_path: Path) -> None:
    process, url = _render(tmp_path)
    try:
        lines = []
        deadline = time.monotonic() + 120
        while not any("still serving the finished stream" in line for line in lines):
            assert process.poll() is None and time.monotonic() < deadline, process.stderr.read() if process.stderr else ""
            lines.append(process.stdout.readline())  # type: ignore[union-attr]
        time.sleep(0.5)
        assert process.poll() is None, "the render is over but the preview still serves"
        assert httpx.get(url).status_code == 200
        assert "#EXT-X-ENDLIST" in httpx.get(url + "hls/index.m3u8").text
        process.send_signal(signal.SIGINT)
        assert process.wait(30) == 0
        with pytest.raises(httpx.ConnectError):
            httpx.get(url)
    finally:
        process.kill()
        process.wait()


def test_no_keep_preview_stops_with_the_render(tmp_path: Path) -> None:
    process, url = _render(tmp_path, "--no-keep-preview")
    out, _ = process.communicate(timeout=120)
    assert process.returncode == 0 and "still serving" not in out
    with pytest.raises(httpx.ConnectError):
        httpx.get(url)
