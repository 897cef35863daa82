"""RTMP output: FLV over FFmpeg's rtmp protocol in a child process, reconnected with backoff by the publisher.

The connection lives in a child process (``rtmp_child``) because FFmpeg's
RTMP client holds the GIL while it blocks: a silent peer would otherwise
freeze generation and every other output. Packets reach the child through a
pipe written without blocking; a child that takes nothing for
``write_timeout_s`` (a stuck peer) is killed and the publisher reconnects.
Memory stays bounded by the pipe and the runner's queue.
"""

from __future__ import annotations

import os
import select
import subprocess
import sys
import tempfile
import time
from typing import IO
from urllib.parse import urlsplit

from avatarstream.errors import InputError, PublishError
from avatarstream.publish.packets import EncodedPacket, StreamInfo
from avatarstream.publish.sink import Sink, SinkReport
from avatarstream.publish.sinks.rtmp_child import encode_info, encode_packet

SCHEMES = ("rtmp", "rtmps")
CHILD = "avatarstream.publish.sinks.rtmp_child"
DEFAULT_WRITE_TIMEOUT_S = 5.0


class RtmpSink(Sink):
    """Publishes to ``rtmp://host[:port]/app/stream``; a network sink, so it may drop and reconnect."""

    lossless = False
    reconnect = True

    def __init__(self, url: str, write_timeout_s: float = DEFAULT_WRITE_TIMEOUT_S) -> None:
        check_rtmp_url(url)
        self.url = url
        self.name = f"rtmp:{url}"
        self.write_timeout_s = write_timeout_s
        self._child: subprocess.Popen[bytes] | None = None
        self._stderr: IO[bytes] | None = None
        self._written = 0
        self._failed = False  # this connection's failure was already raised from write

    def open(self, info: StreamInfo) -> None:
        self._written = 0
        self._failed = False
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 - closed in close()
        self._child = subprocess.Popen([sys.executable, "-m", CHILD, self.url], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=self._stderr)
        assert self._child.stdin is not None
        os.set_blocking(self._child.stdin.fileno(), False)
        self._send(encode_info(info))

    def write(self, packet: EncodedPacket) -> None:
        try:
            self._send(encode_packet(packet))
        except PublishError:
            self._failed = True
            raise
        self._written += 1

    def close(self) -> SinkReport:
        """End the stream (the child writes the FLV trailer); a child that does not finish in time is killed."""
        child, self._child = self._child, None
        errors: list[str] = []
        if child is not None:
            assert child.stdin is not None  # opened with stdin=PIPE
            try:
                child.stdin.close()
            except OSError:
                pass
            try:
                child.wait(self.write_timeout_s)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
                errors.append(f"the RTMP peer did not take the end of the stream within {self.write_timeout_s:g} s")
            if child.returncode not in (0, -9) and not errors and not self._failed:
                errors.append(f"the RTMP connection failed: {self._child_error()}")
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None
        return SinkReport(self.name, packets_delivered=self._written, errors=errors)

    def _send(self, data: bytes) -> None:
        """Write all of ``data`` to the child, or fail once it has taken nothing for ``write_timeout_s``."""
        child = self._child
        if child is None or child.stdin is None:
            raise RuntimeError(f"{self.name} is not open")
        fd = child.stdin.fileno()
        view = memoryview(data)
        deadline = time.monotonic() + self.write_timeout_s
        while view:
            if child.poll() is not None:
                raise PublishError(f"the RTMP connection ended: {self._child_error()}")
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                child.kill()
                raise PublishError(f"the RTMP peer took nothing for {self.write_timeout_s:g} s; dropped it (the publisher reconnects)")
            _, writable, _ = select.select([], [fd], [], min(remaining, 0.2))
            if not writable:
                continue
            try:
                sent = os.write(fd, view)
            except BlockingIOError:
                continue
            except BrokenPipeError:
                child.wait()
                raise PublishError(f"the RTMP connection ended: {self._child_error()}") from None
            view = view[sent:]
            deadline = time.monotonic() + self.write_timeout_s  # progress: the peer is alive

    def _child_error(self) -> str:
        if self._stderr is None:
            return "no details"
        self._stderr.seek(0)
        lines = self._stderr.read()[-2000:].decode(errors="replace").strip().splitlines()
        return lines[-1] if lines else f"exit code {self._child.returncode if self._child else '?'}"


def check_rtmp_url(url: str) -> None:
    """Reject what FFmpeg could not publish to, before the run starts."""
    parts = urlsplit(url)
    if parts.scheme not in SCHEMES or not parts.hostname or parts.path.strip("/").count("/") < 1:
        raise InputError(f"--rtmp {url!r} is not an RTMP publish URL; expected rtmp://HOST[:PORT]/APP/STREAM")
    try:
        parts.port  # noqa: B018 - reading it is the check
    except ValueError as err:
        raise InputError(f"--rtmp {url!r} has a bad port: {err}") from err
