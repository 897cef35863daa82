"""``make fuzz``'s API share: schemathesis's stateful runs (serve/api_fuzz.py), randomized, against an ``avatarstream
serve`` process of its own, batch after batch until the time is spent. Beyond each answer's checks, the server itself is
judged after the run: every session closed again, and its resident memory grown by at most a bound past the first batch
(which warms it up: the model's caches, the worker threads, the encoders' first allocations)."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from serve.api_fuzz import fuzz_stateful, sessions_left

TOKEN = "fuzz-token-0123456789"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
#: A batch of scenarios, each of at most STEPS linked calls; an answer slower than MAX_RESPONSE_S is a failure.
SCENARIOS, STEPS, MAX_RESPONSE_S = 25, 10, 5.0
#: How much the server's resident memory may grow past the first batch over the whole run.
MAX_GROWTH_MIB = 200


def run_for(seconds: float, out: Path) -> dict[str, Any]:
    found = out / "findings" / "api"
    found.mkdir(parents=True, exist_ok=True)
    (out / "logs").mkdir(parents=True, exist_ok=True)
    with _server(out / "logs" / "api-server.log") as (base, pid):
        deadline = time.monotonic() + seconds
        calls = scenarios = batches = 0
        failures: list[str] = []
        warm = None
        while time.monotonic() < deadline:
            run = fuzz_stateful(base, AUTH, scenarios=SCENARIOS, steps=STEPS, derandomize=False, max_response_s=MAX_RESPONSE_S)
            calls, scenarios, batches = calls + run.calls, scenarios + run.scenarios, batches + 1
            failures += [f for f in run.failures if f not in failures]
            warm = warm if warm is not None else _rss_mib(pid)
        sessions = sessions_left(base)
        grown = _rss_mib(pid) - (warm or 0)
    if sessions:
        failures.append(f"{sessions} sessions still open after every scenario closed what it opened")
    if grown > MAX_GROWTH_MIB:
        failures.append(f"the server's resident memory grew by {grown} MiB after the first batch (bound: {MAX_GROWTH_MIB} MiB)")
    (found / "failures.txt").write_text("\n\n".join(failures))
    return {"seconds": round(seconds), "batches": batches, "scenarios": scenarios, "calls": calls, "sessions_after": sessions,
            "rss_growth_mib": grown, "failures": len(failures)}  # fmt: skip


@contextmanager
def _server(log: Path) -> Iterator[tuple[str, int]]:
    """``avatarstream serve`` (demo-tiny, small chunks, two session slots) on a free port, stopped with Ctrl-C."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    exe = Path(sys.executable).with_name("avatarstream")
    command = [str(exe), "serve", "--model", "demo-tiny", "--chunk-frames", "6", "--interp-frames", "2", "--port", str(port), "--token", TOKEN,
               "--max-sessions", "2", "--max-upload-mb", "0.25", "--threads", "1", "--x264-preset", "ultrafast"]  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    with log.open("w") as sink:
        process = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT)
        try:
            _wait_until_up(base, process)
            yield base, process.pid
        finally:
            process.send_signal(signal.SIGINT)
            try:
                process.wait(60)
            except subprocess.TimeoutExpired:
                process.kill()


def _wait_until_up(base: str, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and process.poll() is None:
        try:
            httpx.get(f"{base}/healthz", timeout=2)
            return
        except httpx.TransportError:
            time.sleep(0.2)
    raise RuntimeError("the server did not start; see out/fuzz/logs/api-server.log")


def _rss_mib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) // 1024
    return 0
