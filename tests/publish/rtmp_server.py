"""A real RTMP server for tests: Debian's nginx with libnginx-mod-rtmp on a free loopback port."""

from __future__ import annotations

import socket
import subprocess
import time
from pathlib import Path

from typing_extensions import Self

from avatarstream.benchmarks.local_server import free_port
from publish_needs import NGINX, RTMP_MODULE

CONFIG = """
daemon off;
master_process off;
worker_processes 1;
pid {root}/nginx.pid;
error_log {root}/error.log info;
load_module {module};
events {{ worker_connections 64; }}
rtmp {{
    server {{
        listen 127.0.0.1:{port};
        application live {{
            live on;
            record all;
            record_path {root}/recordings;
            record_unique off;
        }}
    }}
}}
"""


class RtmpServer:
    """Records every stream published to rtmp://127.0.0.1:PORT/live/NAME into recordings/NAME.flv."""

    def __init__(self, root: Path, port: int | None = None) -> None:
        self.root = root
        self.port = port or free_port()
        self.recordings = root / "recordings"
        self.recordings.mkdir(parents=True, exist_ok=True)
        self.recordings.chmod(0o777)  # nginx may drop to an unprivileged user
        self._process: subprocess.Popen[bytes] | None = None

    def url(self, name: str) -> str:
        return f"rtmp://127.0.0.1:{self.port}/live/{name}"

    def start(self) -> RtmpServer:
        config = self.root / "nginx.conf"
        config.write_text(CONFIG.format(root=self.root, module=RTMP_MODULE, port=self.port))
        self._process = subprocess.Popen(
            [NGINX, "-p", str(self.root), "-c", str(config), "-e", str(self.root / "error.log")],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise RuntimeError(f"nginx exited: {(self.root / 'error.log').read_text()}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return self
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("nginx did not start listening")

    def stop(self) -> None:
        if self._process is not None and self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(5)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        self._process = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
