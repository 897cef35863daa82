"""examples/livekit_agent.py as docs/agents.md runs it: one line when no LiveKit server answers (no log of retries), and
livekit-agents' own runner, without its deprecated CLI, when one does."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "livekit_agent.py"


def _run(url: str | None, seconds: float) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LIVEKIT_")} | {"LIVEKIT_API_KEY": "devkey", "LIVEKIT_API_SECRET": "secret"}
    if url is not None:
        env["LIVEKIT_URL"] = url
    try:
        return subprocess.run([sys.executable, str(EXAMPLE)], env=env, capture_output=True, text=True, timeout=seconds, check=False)
    except subprocess.TimeoutExpired as running:  # a worker runs until stopped: what it said so far
        out = running.stdout.decode() if isinstance(running.stdout, bytes) else running.stdout or ""
        err = running.stderr.decode() if isinstance(running.stderr, bytes) else running.stderr or ""
        return subprocess.CompletedProcess(running.cmd, -1, out, err)


def test_no_server_is_one_line() -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        closed = probe.getsockname()[1]
    for url, said in ((None, "LIVEKIT_URL is not set"), (f"ws://127.0.0.1:{closed}", "no LiveKit server answers")):
        run = _run(url, 60)
        assert run.returncode == 1
        lines = run.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: ") and said in lines[0], run.stderr


def test_a_listening_server_starts_livekits_own_runner() -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        started = time.monotonic()
        run = _run(f"ws://127.0.0.1:{server.getsockname()[1]}", 12)
    said = run.stdout + run.stderr
    assert run.returncode == -1, f"the worker stopped after {time.monotonic() - started:.1f} s: {said[-1500:]}"
    assert "starting worker" in said and "deprecated" not in said.lower(), said[-1500:]
