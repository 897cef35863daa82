"""The corpus's HTTP and WebSocket rows against one live server: a 4xx ``{"detail": ...}`` (or an ``error`` event) naming the
problem, no server path in it, no stray upload file or session folder, nothing left running or open; then the server still serves."""

from __future__ import annotations

import asyncio
import gc
import json
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
import websockets
from corpus import HTTP, LIMIT, WS, Case, Request, Socket
from leaks import Snapshot
from websockets.sync.client import connect

from serve.serve_harness import TOKEN, Events, running_server, s16, speech, wav_bytes, ws_url

MAX_QUEUED_S = 2.0


class Server:
    """The module's live server, a running session and the id of a closed one."""

    def __init__(self, base: str, work: Path) -> None:
        self.base, self.work = base, work
        self.frames_at_start = 0
        self.client = httpx.Client(base_url=base, timeout=30, headers={"Authorization": f"Bearer {TOKEN}"})
        self.sid = self.create()
        self.closed = self.create()
        self.busy = self.create()  # a session whose audio socket the module holds open
        assert self.client.delete(f"/sessions/{self.closed}").status_code == 200

    def create(self) -> str:
        response = self.client.post("/sessions", data={"identity": "default"})
        assert response.status_code == 201, response.text
        return response.json()["id"]

    def fill(self, text: str) -> str:
        return text.replace("{sid}", self.sid).replace("{closed}", self.closed).replace("{busy}", self.busy)

    def uploads(self) -> list[Path]:
        return sorted(self.work.rglob("upload-*"))

    def session_folders(self) -> list[Path]:
        return sorted(self.work.glob("session-*"))


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    work = tmp_path_factory.mktemp("serve")
    with running_server(work, token=TOKEN, max_upload_bytes=LIMIT, max_queued_audio_s=MAX_QUEUED_S) as base:
        server = Server(base, work / "work")
        server.frames_at_start = server.client.get(f"/sessions/{server.sid}").json()["stats"]["frames"]
        deadline = time.monotonic() + 20
        while sum(t.name.startswith("sink:hls:") for t in threading.enumerate()) < 2 and time.monotonic() < deadline:
            time.sleep(0.1)  # the two running sessions' sink threads start with their first packets: before the rows count threads
        with connect(ws_url(base, server.sid), additional_headers=_headers("good")) as ws:
            ws.send(s16(speech(0.2)))  # the first socket makes a pair of descriptors the server keeps for good (one-time start-up)
        with connect(ws_url(base, server.busy), additional_headers=_headers("good")):
            yield server


def _pool_thread(name: str) -> bool:
    """The server's worker pool (bounded by its max_workers) starts threads as work arrives and keeps them."""
    return name.startswith("serve_")


def _no_path(detail: str, server: Server) -> None:
    assert str(server.work) not in detail and "upload-" not in detail and "/tmp" not in detail, detail


def _headers(token: str | None) -> dict[str, str]:
    return {} if token is None else {"Authorization": f"Bearer {TOKEN if token == 'good' else token}"}


@pytest.mark.parametrize("case", HTTP, ids=[c.id for c in HTTP])
def test_http_row(case: Case, server: Server, tmp_path: Path) -> None:
    request: Request = case.make(tmp_path)
    folders = server.session_folders()
    before = Snapshot(_pool_thread)
    with httpx.Client(base_url=server.base, timeout=30, headers=_headers(request.token)) as client:
        response = client.request(request.method, server.fill(request.path), **request.kwargs)
    assert response.status_code == case.expect, response.text
    if case.accepted:
        deadline = time.monotonic() + 15
        while server.uploads() and time.monotonic() < deadline:  # the accepted clip is spoken, then its file goes
            time.sleep(0.1)
    else:
        detail = response.json()["detail"]
        assert isinstance(detail, str)
        for words in case.words:
            assert words in detail, detail
        _no_path(detail, server)
        if case.expect == 401:
            assert response.headers["www-authenticate"].startswith("Bearer")
    assert server.uploads() == [], "an upload was left in the work folder"
    assert server.session_folders() == folders, "a session folder was left (or lost)"
    before.assert_settled()


def _error_event(ws: Any, timeout: float = 10.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        event = json.loads(ws.recv(timeout=max(0.1, deadline - time.monotonic())))
        if event["type"] == "error":
            return event


@pytest.mark.parametrize("case", WS, ids=[c.id for c in WS])
def test_ws_row(case: Case, server: Server, tmp_path: Path) -> None:
    socket: Socket = case.make(tmp_path)
    url = ws_url(server.base, server.fill(socket.sid), socket.query)
    before = Snapshot(_pool_thread)
    if case.expect:
        with pytest.raises(websockets.InvalidStatus) as refused, connect(url, additional_headers=_headers(socket.token)):
            pass
        assert refused.value.response.status_code == case.expect, refused.value.response.body
        gc.collect()  # the client drops its refused socket without closing it; the collector closes it (not the server's)
        detail = json.loads(refused.value.response.body)["detail"]
    else:
        with connect(url, additional_headers=_headers(socket.token)) as ws:
            for message in socket.send:
                ws.send(message)
            detail = _error_event(ws)["message"]
    for words in case.words:
        assert words in detail, detail
    _no_path(detail, server)
    assert server.uploads() == []
    with httpx.Client(base_url=server.base, headers=_headers("good")) as client:  # the module's client may reconnect (keep-alive timeout)
        assert client.get(f"/sessions/{server.sid}").json()["state"] == "running", "bad data ended the session"
    before.assert_settled()


def test_pcm_faster_than_real_time_is_held_back(server: Server) -> None:
    """A client pushing PCM as fast as it can for seconds: the server queues at most about max_queued_audio_s, then stops reading."""
    sid = server.create()
    peak, info = asyncio.run(_flood(server, sid, seconds=5.0))
    assert peak <= MAX_QUEUED_S + 0.5, f"{peak:.1f} s of speech queued"
    assert peak >= MAX_QUEUED_S - 0.5, f"only {peak:.1f} s queued: the flood did not reach the limit"
    assert info["state"] == "running" and info["stats"]["frames"] > 0, info


async def _flood(server: Server, sid: str, seconds: float) -> tuple[float, dict[str, Any]]:
    piece = s16(speech(0.5))
    peak = 0.0
    ws = await websockets.connect(ws_url(server.base, sid), additional_headers=_headers("good"))
    async with httpx.AsyncClient(base_url=server.base, headers=_headers("good")) as client:

        async def push() -> None:
            while True:
                await ws.send(piece)

        pusher = asyncio.create_task(push())
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            await asyncio.sleep(0.25)
            peak = max(peak, (await client.get(f"/sessions/{sid}")).json()["stats"]["queued_audio_s"])
        info = (await client.get(f"/sessions/{sid}")).json()
        pusher.cancel()
        await asyncio.gather(pusher, return_exceptions=True)
    ws.transport.abort()  # megabytes wait in the socket buffers: a close handshake would queue behind them; the session ends with it
    return peak, info


def test_a_client_that_vanishes_ends_its_session(server: Server) -> None:
    """TCP closed mid-stream without a close frame: the session ends (closed) at once and frees its folder."""
    sid = server.create()
    asyncio.run(_vanish(server, sid))
    deadline = time.monotonic() + 10
    while server.client.get(f"/sessions/{sid}").json()["state"] == "running" and time.monotonic() < deadline:
        time.sleep(0.1)
    assert server.client.get(f"/sessions/{sid}").json()["state"] == "closed"
    assert not any(sid in str(p) for p in server.session_folders()) and server.uploads() == []


async def _vanish(server: Server, sid: str) -> None:
    ws = await websockets.connect(ws_url(server.base, sid), additional_headers=_headers("good"))
    events = Events(ws)
    await ws.send(s16(speech(1.0)))
    await events.wait_for(lambda e: e["type"] == "frames")
    ws.transport.abort()  # no close frame: a crashed client
    events.task.cancel()


def test_the_server_still_serves_after_the_corpus(server: Server) -> None:
    """Runs last in this module: health is ok, the rows' session still runs, and a fresh session speaks a short clip."""
    health = httpx.get(f"{server.base}/healthz").json()
    assert health["status"] == "ok"
    rows_session = server.client.get(f"/sessions/{server.sid}").json()
    assert rows_session["state"] == "running" and rows_session["stats"]["frames"] > server.frames_at_start, "the rows' session stalled"
    sid = server.create()
    queued = server.client.post(f"/sessions/{sid}/audio", content=wav_bytes(speech(1.0)), headers={"Content-Type": "audio/wav"})
    assert queued.status_code == 202, queued.text
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        stats = server.client.get(f"/sessions/{sid}").json()["stats"]
        if stats["frames"] > 0 and stats["first_speech_latency_s"] is not None:
            break
        time.sleep(0.1)
    assert stats["frames"] > 0 and stats["first_speech_latency_s"] is not None, stats
    assert np.isfinite(stats["first_speech_latency_s"])
