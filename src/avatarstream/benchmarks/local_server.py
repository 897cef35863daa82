"""``avatarstream serve`` as a child process on a free loopback port, for benchmarks that measure the server from outside."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from types import TracebackType

from typing_extensions import Self

START_TIMEOUT_S = 120.0


def free_port() -> int:
    """A TCP port nothing listens on now (the caller binds it soon after)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ServerProcess:
    """The server runs for the duration of a ``with`` block; its JSON log goes to ``log``."""

    def __init__(self, options: list[str], token: str, log: Path) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.token = token
        self._command = [sys.executable, "-m", "avatarstream.cli.main", "serve", "--port", str(self.port), "--token", token, *options]
        self._log_path = log
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int:
        assert self._process is not None, "the server is not running"
        return self._process.pid

    def __enter__(self) -> Self:
        self._log = self._log_path.open("wb")
        self._process = subprocess.Popen(self._command, stdout=self._log, stderr=subprocess.STDOUT, env={**os.environ, "PYTHONUNBUFFERED": "1"})
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            if self._process.poll() is not None:
                self._log.close()
                raise RuntimeError(f"the server exited at start (code {self._process.returncode}): {self._log_path.read_text()[-800:]}")
            try:
                with urllib.request.urlopen(f"{self.url}/healthz", timeout=2) as answer:
                    if answer.status == 200:
                        return self
            except (urllib.error.URLError, ConnectionError):
                pass
            if time.monotonic() > deadline:
                self.__exit__(None, None, None)
                raise RuntimeError(f"the server did not answer /healthz within {START_TIMEOUT_S:.0f} s")
            time.sleep(0.2)

    def check_alive(self) -> None:
        if self._process is not None and self._process.poll() is not None:
            raise RuntimeError(f"the server died (code {self._process.returncode}): {self._log_path.read_text()[-800:]}")

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if self._process is not None and self._process.poll() is None:
            self._process.send_signal(signal.SIGINT)  # a clean shutdown closes every session's files
            try:
                self._process.wait(60)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        self._log.close()
