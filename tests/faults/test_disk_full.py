"""A disk that fills up while a file is written (the process's file-size limit, ``RLIMIT_FSIZE``, stands in for it: a
write past it fails as a write onto a full disk does). ``render`` says so in one line and exits non-zero; a server
session with a file output fails alone and says why, while the server and its other sessions go on."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from serve_child import serve_argv, start_serving

RENDER_LIMIT = 96 * 1024  # bytes a file may grow to: a few seconds of demo-tiny's noise (its report is smaller)
SESSION_LIMIT = 8 * 1024  # a live session's video of the idle avatar is smaller: about a second of it


def _limited(limit: int, argv: list[str]) -> list[str]:
    """The CLI in a child whose files cannot grow past ``limit`` bytes; a write past it fails with EFBIG (SIGXFSZ,
    which would kill the process, is ignored) as a write onto a full disk fails with ENOSPC."""
    code = (
        "import resource, signal, sys; signal.signal(signal.SIGXFSZ, signal.SIG_IGN); "
        f"resource.setrlimit(resource.RLIMIT_FSIZE, ({limit}, {limit})); "
        "from avatarstream.cli.main import main; sys.exit(main(sys.argv[1:]))"
    )
    return [sys.executable, "-c", code, *argv]


def test_render_onto_a_full_disk_fails_in_one_line(tmp_path: Path) -> None:
    out, report = tmp_path / "talk.mp4", tmp_path / "report.json"
    argv = ["render", "--model", "demo-tiny", "--threads", "1", "--no-progress", "--out", str(out), "--report", str(report)]
    run = subprocess.run(_limited(RENDER_LIMIT, argv), capture_output=True, text=True, timeout=300, check=False)
    errors = [line for line in run.stderr.splitlines() if not line.startswith("warning: this model has random weights")]
    assert run.returncode == 1, run.stdout + run.stderr
    assert len(errors) == 1 and errors[0].startswith(f"error: output mp4:{out} is incomplete: ") and "File too large" in errors[0], run.stderr
    assert run.stdout.startswith(f"failed: mp4:{out} incomplete"), run.stdout  # the closing line says it too
    (output,) = json.loads(report.read_text())["outputs"]  # the report (small: written before the limit bites) names it
    assert output["name"] == f"mp4:{out}" and output["complete"] is False and output["errors"]


def _wait_frames(base: str, sid: str, frames: int) -> None:
    deadline = time.monotonic() + 60
    while httpx.get(f"{base}/sessions/{sid}").json()["stats"]["frames"] < frames:
        assert time.monotonic() < deadline, f"session {sid} stalled"
        time.sleep(0.2)


def _wait_state(base: str, sid: str, state: str) -> dict:
    deadline = time.monotonic() + 60
    while (info := httpx.get(f"{base}/sessions/{sid}").json())["state"] != state:
        assert time.monotonic() < deadline, info
        time.sleep(0.2)
    return info


@pytest.mark.timeout(300)
def test_a_session_whose_file_fails_fails_alone(tmp_path: Path) -> None:
    log: list[str] = []
    argv, base = serve_argv(tmp_path / "work")
    server = start_serving(_limited(SESSION_LIMIT, argv), base, log)  # its output goes to a pipe, which no file limit reaches
    try:
        writing = httpx.post(f"{base}/sessions", data={"outputs": '{"hls": false, "file": true}'}).json()["id"]
        watched = httpx.post(f"{base}/sessions", data={"outputs": '{"hls": false, "frames_ws": true}'}).json()["id"]
        failed = _wait_state(base, writing, "failed")  # on its own, once its file cannot grow
        assert "File too large" in failed["error"], failed
        before = httpx.get(f"{base}/sessions/{watched}").json()["stats"]["frames"]
        _wait_frames(base, watched, before + 25)  # the other session goes on
        assert httpx.get(f"{base}/healthz").json()["status"] == "ok"
        assert any('"session failed"' in line and "File too large" in line for line in log), "".join(log[-20:])
    finally:
        server.terminate()
        server.wait(60)
