"""Viewers that stop reading: a frames-WebSocket client (a real server) and preview-page connections (a real publisher).

The server keeps at most its documented bound for such a client and then drops it; the session, and the viewers that
do read, carry on as if it were not there.
"""

from __future__ import annotations

import asyncio
import json
import socket
import struct
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest
import uvicorn
import websockets

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "serve"))  # the server tests' harness

import serve_harness
from serve_harness import TOKEN, running_server

from avatarstream.publish import preview
from avatarstream.publish.preview import PreviewServer
from avatarstream.publish.publisher import Publisher
from avatarstream.publish.settings import EncoderSettings
from avatarstream.publish.sinks import HlsSink
from avatarstream.serve import api_frames_ws
from avatarstream.serve.media_watch import MEDIA_QUEUE
from mp4_checks import make_chunks

HIGH_WATER = 64 * 1024  # asyncio's default write-buffer high-water mark, below which uvicorn waits before each message
SEND_TIMEOUT_S = 2.0  # the frames socket's (10 s), shortened so that the test waits less


@dataclass
class Watch:
    """What the test sees of the server while the stuck client is connected."""

    frames: list[int] = field(default_factory=list)  # frame indices the reading client got, in arrival order
    rates: dict[str, float] = field(default_factory=dict)  # frames a second the reading client got: before, during
    write_buffer: list[int] = field(default_factory=list)  # the stuck connection's, sampled
    queued: list[int] = field(default_factory=list)  # the longest watcher queue, sampled
    held_back: bool = False  # the stuck connection was paused for writing: the client's kernel buffers were full
    dropped_after_s: float | None = None  # from the stuck client's connection to its drop


def test_a_frames_client_that_stops_reading_is_bounded_then_dropped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(api_frames_ws, "SEND_TIMEOUT_S", SEND_TIMEOUT_S)
    apps, servers = _record_server(monkeypatch)
    # "demo": 256x256 frames, 5 MB/s per client, so that the kernel's socket buffers fill within a second
    with running_server(tmp_path, token=TOKEN, model="demo", model_options={}) as base, httpx.Client(base_url=base, timeout=30) as client:
        client.headers["Authorization"] = f"Bearer {TOKEN}"
        created = client.post("/sessions", data={"outputs": json.dumps({"hls": False, "frames_ws": True})})
        assert created.status_code == 201, created.text
        sid = created.json()["id"]
        session = apps[0].state.server.manager.get(sid, "live")
        watch, stream = asyncio.run(_watch(base, sid, session, servers[0]))
        assert client.delete(f"/sessions/{sid}").status_code == 200
    message = 4 + 128 + stream["width"] * stream["height"] * 3 + 1920 * stream["channels"] * 2  # length, header (< 128), picture, audio
    assert watch.held_back, "the kernel took everything: the test did not reach the server's own buffering"
    assert max(watch.write_buffer) <= HIGH_WATER + message, watch.write_buffer
    assert max(watch.queued) <= MEDIA_QUEUE
    assert watch.dropped_after_s is not None  # dropped: its queue and buffer freed, its session free to idle out
    assert watch.dropped_after_s >= SEND_TIMEOUT_S  # not before it had taken nothing for the timeout
    assert watch.frames == list(range(watch.frames[0], watch.frames[0] + len(watch.frames)))  # the reader: every frame, in order
    assert watch.rates["during"] / watch.rates["before"] > 0.8, watch.rates  # the session kept its pace


async def _watch(base: str, sid: str, session: object, server: uvicorn.Server) -> tuple[Watch, dict]:
    url = base.replace("http://", "ws://") + f"/sessions/{sid}/frames?token={TOKEN}"
    watch = Watch()
    async with websockets.connect(url, max_size=None) as reader:
        stream = json.loads(await reader.recv())
        reading = asyncio.create_task(_read(reader, watch.frames))
        await asyncio.sleep(1.5)
        watch.rates["before"] = len(watch.frames) / 1.5
        stuck_socket = socket.create_connection(server.servers[0].sockets[0].getsockname()[:2])
        stuck_socket.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        stuck = await websockets.connect(url, sock=stuck_socket, max_size=None)
        stuck.transport.pause_reading()  # from here on it takes nothing
        connected, before = time.monotonic(), len(watch.frames)
        while session.watchers < 2 and time.monotonic() - connected < 10:  # type: ignore[attr-defined]
            await asyncio.sleep(0.01)
        assert session.watchers == 2  # type: ignore[attr-defined]
        port = stuck_socket.getsockname()[1]
        while time.monotonic() - connected < SEND_TIMEOUT_S + 30:  # a generous hang guard
            await asyncio.sleep(0.1)
            protocol = next((c for c in server.server_state.connections if getattr(c, "client", None) == ("127.0.0.1", port)), None)
            if protocol is not None:
                watch.write_buffer.append(protocol.transport.get_write_buffer_size())  # type: ignore[attr-defined]
                watch.held_back |= not protocol.writable.is_set()  # type: ignore[attr-defined]
            watch.queued.append(max((q.qsize() for q in session.media._queues), default=0))  # type: ignore[attr-defined]
            if session.watchers == 1:  # type: ignore[attr-defined]
                watch.dropped_after_s = time.monotonic() - connected
                break
        watch.rates["during"] = (len(watch.frames) - before) / (time.monotonic() - connected)
        await asyncio.sleep(0.5)  # and the reader goes on after the drop
        reading.cancel()
        stuck.transport.abort()
    return watch, stream


async def _read(ws: websockets.ClientConnection, frames: list[int]) -> None:
    while True:
        data = await ws.recv()
        (size,) = struct.unpack_from("<I", data)
        frames.append(json.loads(data[4 : 4 + size])["frame"])


def _record_server(monkeypatch: pytest.MonkeyPatch) -> tuple[list, list[uvicorn.Server]]:
    """The app and the uvicorn server that ``running_server`` makes, to look inside them while they run."""
    apps: list = []
    servers: list[uvicorn.Server] = []
    create_app = serve_harness.create_app

    class Recorded(uvicorn.Server):
        def __init__(self, config: uvicorn.Config) -> None:
            super().__init__(config)
            servers.append(self)

    monkeypatch.setattr(serve_harness, "create_app", lambda settings: apps.append(create_app(settings)) or apps[-1])
    monkeypatch.setattr(uvicorn, "Server", Recorded)
    return apps, servers


PREVIEW = EncoderSettings(width=64, height=48, fps=25, preset="ultrafast")
REQUEST_TIMEOUT_S = 1.0  # the preview server's (30 s), shortened so that the test waits less
STOPPED_VIEWERS = 4  # within the server's listen backlog (5), so that each connects at once


def test_preview_connections_that_stop_are_hung_up(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Connections to the preview page that send half a request and stop: each holds a thread until the timeout."""
    monkeypatch.setattr(preview.server, "REQUEST_TIMEOUT_S", REQUEST_TIMEOUT_S)
    server = PreviewServer(tmp_path / "hls", port=0)
    publisher = Publisher(PREVIEW, [HlsSink(tmp_path / "hls"), server])
    playlists: list[int] = []
    stopped: list[socket.socket] = []
    held = 0  # threads the stopped viewers held
    with publisher:
        for i, chunk in enumerate(make_chunks([25] * 6, PREVIEW.width, PREVIEW.height)):
            publisher.submit(chunk)
            if i == 1:
                for _ in range(STOPPED_VIEWERS):
                    viewer = socket.create_connection((server.host, server.port))
                    viewer.sendall(b"GET /hls/index.m3u8 HTTP/1.1\r\nHost: preview\r\n")  # and never the blank line
                    stopped.append(viewer)
                held = _wait_for_threads(lambda n: n >= STOPPED_VIEWERS, timeout_s=5)
            time.sleep(0.25)
            playlists.append(_segments(server.url))  # a viewer that reads is served
        left = _wait_for_threads(lambda n: n == 0, timeout_s=REQUEST_TIMEOUT_S + 30)  # a generous hang guard
        hung_up = [_closed(viewer) for viewer in stopped]
    assert held >= STOPPED_VIEWERS  # they did hold a thread each while they waited
    assert left == 0, "connections that stopped still hold their threads"
    assert all(hung_up)
    assert playlists == sorted(playlists) and playlists[-1] >= 3  # the stream went on: segments kept coming
    assert all(report.complete for report in publisher.reports), publisher.reports


def _segments(url: str) -> int:
    """The segments the playlist lists (0 before the first is written)."""
    try:
        with urllib.request.urlopen(url + "hls/index.m3u8", timeout=5) as answer:
            return answer.read().count(b"#EXTINF")
    except urllib.error.HTTPError as err:
        assert err.code == 404
        return 0


def _closed(viewer: socket.socket) -> bool:
    """Whether the server has closed this connection (it answers nothing to half a request)."""
    viewer.settimeout(0.5)
    try:
        return viewer.recv(1) == b""
    except TimeoutError:
        return False
    finally:
        viewer.close()


def _wait_for_threads(done: Callable[[int], bool], timeout_s: float) -> int:
    """The number of preview request threads once ``done`` says so, or at the timeout."""
    deadline = time.monotonic() + timeout_s
    while not done(count := _request_threads()) and time.monotonic() < deadline:
        time.sleep(0.02)
    return count


def _request_threads() -> int:
    """Threads serving a preview connection (ThreadingHTTPServer names them after process_request_thread)."""
    return sum("process_request_thread" in t.name for t in threading.enumerate())
