"""``avatarstream serve`` (demo-tiny, one thread) as a child process the fault tests can signal, limit and read."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx

from avatarstream.benchmarks.local_server import free_port

CLI = [sys.executable, "-m", "avatarstream.cli.main"]


def serve_argv(work: Path, *extra: str) -> tuple[list[str], str]:
    """The command line after the CLI's name, on a free port, and the server's base URL."""
    port = free_port()
    argv = ["serve", "--model", "demo-tiny", "--threads", "1", "--port", str(port), "--work-dir", str(work), *extra]
    return argv, f"http://127.0.0.1:{port}"


def start_serving(command: list[str], base: str, output: list[str] | None = None) -> subprocess.Popen[str]:
    """Start ``command`` and return once it answers /healthz at ``base``. ``output``: collects what it prints (read from a
    pipe all along, so it never blocks); None: its output is dropped."""
    if output is None:
        server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, text=True)
    else:
        server = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        threading.Thread(target=lambda: output.extend(server.stdout or ()), daemon=True).start()
    deadline = time.monotonic() + 120
    while True:
        try:
            httpx.get(f"{base}/healthz", timeout=2).raise_for_status()
            return server
        except httpx.HTTPError:
            assert server.poll() is None and time.monotonic() < deadline, f"the server did not start: {''.join(output or [])}"
            time.sleep(0.3)
