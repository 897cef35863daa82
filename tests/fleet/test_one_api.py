"""One API: the single server's session and job routes, checked by one client against `avatarstream serve` and against
`avatarstream fleet --replicas 1` (demo-tiny, a token on both), with the same expected statuses, bodies and media.

Every documented URL of docs/api.md: status, audio (upload and WebSocket), interrupt, HLS (playlist, init, a segment), the
WebRTC offer, DELETE, the session's MP4 after close (and a byte range of it), jobs and their MP4, unknown ids and a missing
token. The client follows redirects (none is expected: the fleet proxies its video routes, docs/fleet.md).

The fleet runs as a user runs it, in a process of its own; the last test stops it with Ctrl-C while a session is open, and
checks that the session closed, the process exited cleanly and it printed only avatarstream's own lines (no Ray or Serve
log lines: "Connecting to existing Serve app ... will not be applied", "killed by ray.kill").
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import av
import httpx
import pytest
import websockets

from avatarstream.benchmarks.local_server import free_port
from avatarstream.cli.serve import TOKEN_ENV
from serve.api_fuzz import fuzz_api
from serve.serve_harness import SMALL_CHUNKS, Events, running_server, s16, speech, wav_bytes, ws_url

TOKEN = "one-api-token-0123456789"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
CHUNK = 6  # demo-tiny's frames per chunk with SMALL_CHUNKS
SIZE = (64, 64)
GONE = "no such {}; it may have ended, timed out or never existed"
NETWATCH = Path(__file__).resolve().parents[1] / "netwatch"
pytestmark = pytest.mark.timeout(240)


@dataclass
class Fleet:
    """``avatarstream fleet`` as a user runs it, in a process group of its own (a terminal's Ctrl-C reaches the group)."""

    process: subprocess.Popen[bytes]
    output: Path

    def lines(self) -> list[str]:
        return self.output.read_text(errors="replace").splitlines()

    def ctrl_c(self, timeout_s: float) -> int:
        os.killpg(self.process.pid, signal.SIGINT)
        return self.process.wait(timeout_s)


def start_fleet(folder: Path) -> tuple[Fleet, str]:
    """One replica of demo-tiny (small chunks, as the server tests run it) on a Ray cluster of one CPU started here."""
    port = free_port()
    command = [sys.executable, "-m", "avatarstream.cli.main", "fleet", "--replicas", "1", "--model", "demo-tiny", "--num-cpus", "1",
               "--port", str(port), "--chunk-frames", str(SMALL_CHUNKS["chunk_frames"]), "--interp-frames", str(SMALL_CHUNKS["interp_frames"]),
               "--x264-preset", "ultrafast", "--threads", "1", "--work-dir", str(folder / "work")]  # fmt: skip
    output = folder / "fleet.out"
    netlog = folder / "netlog"  # every fleet process notes where it sends packets (tests/netwatch)
    netlog.mkdir()
    env = {
        **os.environ,
        TOKEN_ENV: TOKEN,
        "AVATARSTREAM_NETLOG": str(netlog),
        "PYTHONPATH": os.pathsep.join(filter(None, [str(NETWATCH), os.environ.get("PYTHONPATH")])),
    }
    with output.open("wb") as sink:  # a file, not a pipe: nothing blocks on a full pipe while the tests run
        process = subprocess.Popen(command, env=env, stdout=sink, stderr=subprocess.STDOUT, start_new_session=True)
    fleet = Fleet(process, output)
    deadline = time.monotonic() + 150
    while not any("replicas ready" in line for line in fleet.lines()):
        assert process.poll() is None and time.monotonic() < deadline, f"the fleet did not start: {fleet.lines()[-20:]}"
        time.sleep(0.2)
    return fleet, f"http://127.0.0.1:{port}"


@pytest.fixture(scope="module", params=["server", "fleet"])
def backend(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Fleet | None]]:
    """A single server (in this process), then ``avatarstream fleet`` with one replica: both demo-tiny, both with a token."""
    if request.param == "server":
        with running_server(tmp_path_factory.mktemp("server"), token=TOKEN) as url:
            yield url, None
        return
    pytest.importorskip("ray.serve", reason="the fleet extra is not installed: pip install 'avatarstream[fleet]'")
    started = time.monotonic()
    fleet, url = start_fleet(tmp_path_factory.mktemp("fleet"))
    print(f"\nfleet of one replica ready in {time.monotonic() - started:.1f} s")
    try:
        yield url, fleet
    finally:
        if fleet.process.poll() is None:  # the last test stops it as a user does; when it did not get that far
            with contextlib.suppress(subprocess.TimeoutExpired):
                fleet.ctrl_c(60)
        if fleet.process.poll() is None:
            os.killpg(fleet.process.pid, signal.SIGKILL)
            fleet.process.wait()


@pytest.fixture
def base(backend: tuple[str, Fleet | None]) -> str:
    return backend[0]


def client(base: str) -> httpx.AsyncClient:
    return httpx.AsyncClient(base_url=base, headers=AUTH, timeout=30, follow_redirects=True)


async def poll(check: Any, timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if (found := await check()) is not None:
            return found
        await asyncio.sleep(0.1)
    raise AssertionError(f"{what}: not within {timeout} s")


def decoded(data: bytes) -> tuple[int, tuple[int, int]]:
    """Frames and frame size of an MP4."""
    with av.open(io.BytesIO(data)) as container:
        frames = [frame for frame in container.decode(video=0)]
    return len(frames), (frames[0].width, frames[0].height)


def test_a_live_session_on_every_route(base: str) -> None:
    asyncio.run(_live_session(base))


async def _live_session(base: str) -> None:
    async with client(base) as http:
        created = await http.post("/sessions", data={"identity": "default", "outputs": json.dumps({"hls": True, "file": True})})
        assert created.status_code == 201, created.text
        sid = created.json()["id"]
        status = await http.get(f"/sessions/{sid}")
        assert status.status_code == 200 and status.json()["id"] == sid and status.json()["state"] == "running"

        async with websockets.connect(ws_url(base, sid), additional_headers=AUTH) as ws:
            events = Events(ws)
            await ws.send(s16(speech(1.0)))
            await events.wait_for(lambda e: e["type"] == "frames" and e["speech"] > 0)
            upload = await http.post(f"/sessions/{sid}/audio", files={"audio": ("a.wav", wav_bytes(speech(1.0)), "audio/wav")})
            assert upload.status_code == 202 and upload.json()["clip_s"] == 1.0, upload.text

            async def playlist() -> str | None:
                answer = await http.get(f"/sessions/{sid}/hls/index.m3u8")
                assert answer.status_code in (200, 404), answer.text
                return answer.text if answer.status_code == 200 and re.search(r"seg\d{5}\.m4s", answer.text) else None

            text = await poll(playlist, 20, "a playlist with a segment")
            answer = await http.get(f"/sessions/{sid}/hls/index.m3u8")
            assert answer.headers["content-type"] == "application/vnd.apple.mpegurl" and answer.headers["cache-control"] == "no-store"
            assert text.startswith("#EXTM3U") and 'URI="init.mp4"' in text
            init = await http.get(f"/sessions/{sid}/hls/init.mp4")
            assert init.status_code == 200 and init.headers["content-type"] == "video/mp4" and init.content[4:8] == b"ftyp"
            first = re.findall(r"seg\d{5}\.m4s", text)[0]
            segment = await http.get(f"/sessions/{sid}/hls/{first}")
            assert segment.status_code == 200 and segment.headers["content-type"] == "video/iso.segment" and len(segment.content) > 100
            wrong = await http.get(f"/sessions/{sid}/hls/other.ts")
            assert wrong.status_code == 404 and wrong.json()["detail"] == "no such HLS file; the playlist is index.m3u8"

            running = await http.get(f"/sessions/{sid}/video.mp4")
            assert running.status_code == 409 and running.json()["detail"].startswith("the video is ready when the session is closed")
            cut = await http.post(f"/sessions/{sid}/interrupt")
            assert cut.status_code == 200 and set(cut.json()) == {"dropped_s", "idle_from_frame", "idle_in_s"}, cut.text
            await events.wait_for(lambda e: e["type"] == "interrupted")

            closed = await http.delete(f"/sessions/{sid}")
            assert closed.status_code == 200 and closed.json()["state"] == "closed", closed.text
            await events.wait_for(lambda e: e["type"] == "closed" and e["state"] == "closed")
        frames = closed.json()["stats"]["frames"]
        assert (await http.get(f"/sessions/{sid}")).json()["state"] == "closed"
        hls = await http.get(f"/sessions/{sid}/hls/index.m3u8")
        assert hls.status_code == 404 and hls.json()["detail"] == GONE.format("session")

        video = await http.get(f"/sessions/{sid}/video.mp4")
        assert video.status_code == 200 and video.headers["content-type"] == "video/mp4", video.text
        count, size = decoded(video.content)
        assert size == SIZE and count >= frames - CHUNK, (count, frames)
        part = await http.get(f"/sessions/{sid}/video.mp4", headers={"Range": "bytes=0-99"})
        assert part.status_code == 206 and part.content == video.content[:100]
        assert part.headers["content-range"] == f"bytes 0-99/{len(video.content)}"

        assert (await http.delete(f"/sessions/{sid}")).status_code == 200, "deleting a closed session forgets it and its MP4"
        for path in (f"/sessions/{sid}", f"/sessions/{sid}/video.mp4"):
            gone = await http.get(path)
            assert gone.status_code == 404 and gone.json()["detail"] == GONE.format("session"), (path, gone.text)


def test_a_webrtc_offer(backend: tuple[str, Fleet | None]) -> None:
    """...and the server (or every process of the fleet) sends nothing beyond this machine meanwhile: no STUN server is
    asked (host candidates only, by default), no name outside is looked up."""
    base, fleet = backend
    recorder = _in_process_recorder()
    start = time.time()
    recorder.on = fleet is None
    try:
        asyncio.run(_webrtc(base))
    finally:
        recorder.on = False
    seen = recorder.seen if fleet is None else _fleet_netlog(fleet, start, time.time())
    # the single server's media goes through Python's sockets: its packets are seen. A replica runs on uvloop, whose
    # datagrams bypass them; there the watch sees the name lookups and TCP connects (a STUN server is looked up by name)
    wanted = "socket.sendto" if fleet is None else "socket."
    assert any(event.startswith(wanted) for event, _ in seen), f"the watch saw nothing of the session: {seen}"
    outside = sorted((event, host) for event, host in seen if host not in _this_machine())
    assert outside == [], f"traffic beyond this machine during a WebRTC session: {outside}"


def _in_process_recorder() -> Any:
    import importlib.util

    if not hasattr(_in_process_recorder, "recorder"):
        spec = importlib.util.spec_from_file_location("netwatch", NETWATCH / "sitecustomize.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        _in_process_recorder.recorder = module.Recorder()  # type: ignore[attr-defined]
    return _in_process_recorder.recorder  # type: ignore[attr-defined]


def _fleet_netlog(fleet: Fleet, start: float, end: float) -> set[tuple[str, str]]:
    seen = set()
    for log in (fleet.output.parent / "netlog").glob("*.log"):
        for line in log.read_text().splitlines():
            at, event, host = line.split(" ", 2)
            if start <= float(at) <= end:
                seen.add((event, host))
    return seen


def _this_machine() -> set[str]:
    """Names and addresses that stay on this machine: loopback, and every address of its own interfaces."""
    import socket

    import psutil

    addresses = {a.address.split("%")[0] for addrs in psutil.net_if_addrs().values() for a in addrs if a.family in (socket.AF_INET, socket.AF_INET6)}
    return addresses | {"localhost", "127.0.0.1", "::1", "0.0.0.0", "::", socket.gethostname()}


async def _webrtc(base: str) -> None:
    from aiortc import RTCConfiguration, RTCPeerConnection, RTCRtpReceiver, RTCSessionDescription

    async with client(base) as http:
        plain = (await http.post("/sessions", data={"identity": "default"})).json()["id"]
        refused = await http.post(f"/sessions/{plain}/webrtc", json={"sdp": "x", "type": "offer"})
        assert refused.status_code == 409 and "no WebRTC output" in refused.json()["detail"], refused.text
        bad = await http.post(f"/sessions/{plain}/webrtc", json={"type": "offer"})
        assert bad.status_code == 422 and "sdp" in bad.json()["detail"]
        assert (await http.delete(f"/sessions/{plain}")).status_code == 200  # the fleet's one slot is free again

        created = await http.post("/sessions", data={"outputs": '{"hls": false, "webrtc": true}'})
        assert created.status_code == 201, created.text
        sid = created.json()["id"]
        pc = RTCPeerConnection(RTCConfiguration(iceServers=[]))  # the viewer asks no STUN server either: all traffic is the server's
        received: asyncio.Future[Any] = asyncio.get_running_loop().create_future()

        def on_track(track: Any) -> None:
            if track.kind == "video" and not received.done():
                received.set_result(track)

        pc.on("track", on_track)
        transceiver = pc.addTransceiver("video", direction="recvonly")
        transceiver.setCodecPreferences([c for c in RTCRtpReceiver.getCapabilities("video").codecs if c.mimeType == "video/H264"])
        await pc.setLocalDescription(await pc.createOffer())
        answer = await http.post(f"/sessions/{sid}/webrtc", json={"sdp": pc.localDescription.sdp, "type": pc.localDescription.type})
        assert answer.status_code == 200 and answer.json()["type"] == "answer", answer.text
        await pc.setRemoteDescription(RTCSessionDescription(**answer.json()))
        frame = await asyncio.wait_for((await asyncio.wait_for(received, 10)).recv(), 20)
        assert (frame.width, frame.height) == SIZE
        await pc.close()
        assert (await http.delete(f"/sessions/{sid}")).status_code == 200


def test_a_job_on_every_route(base: str) -> None:
    asyncio.run(_job(base))


async def _job(base: str) -> None:
    async with client(base) as http:
        submitted = await http.post("/jobs", files={"audio": ("a.wav", wav_bytes(speech(1.0)), "audio/wav")}, data={"identity": "default"})
        assert submitted.status_code == 202, submitted.text
        jid = submitted.json()["id"]

        async def done() -> dict | None:
            answer = await http.get(f"/jobs/{jid}")
            assert answer.status_code == 200, answer.text
            return answer.json() if answer.json()["state"] != "running" else None

        info = await poll(done, 30, "the job is done")
        assert info["state"] == "done" and info["stats"]["frames"] == 25, info
        video = await http.get(f"/jobs/{jid}/video.mp4")
        assert video.status_code == 200 and video.headers["content-type"] == "video/mp4", video.text
        assert decoded(video.content) == (25, SIZE)
        other = await http.get(f"/sessions/{jid}")
        assert other.status_code == 404 and other.json()["detail"] == GONE.format("session"), "a job's id opens no session"
        assert (await http.delete(f"/jobs/{jid}")).status_code == 200
        for path in (f"/jobs/{jid}", f"/jobs/{jid}/video.mp4"):
            gone = await http.get(path)
            assert gone.status_code == 404 and gone.json()["detail"] == GONE.format("job"), (path, gone.text)


def test_unknown_ids_and_a_missing_token(base: str) -> None:
    asyncio.run(_unknown(base))


async def _unknown(base: str) -> None:
    routes = [
        ("GET", "/sessions/nope"),
        ("DELETE", "/sessions/nope"),
        ("POST", "/sessions/nope/interrupt"),
        ("GET", "/sessions/nope/hls/index.m3u8"),
        ("GET", "/sessions/nope/video.mp4"),
        ("GET", "/jobs/nope"),
        ("GET", "/jobs/nope/video.mp4"),
        ("DELETE", "/jobs/nope"),
    ]
    async with client(base) as http, httpx.AsyncClient(base_url=base, timeout=30) as anonymous:
        for method, path in routes:
            answer = await http.request(method, path)
            kind = "session" if path.startswith("/sessions") else "job"
            assert answer.status_code == 404 and answer.json()["detail"] == GONE.format(kind), (method, path, answer.text)
            assert (await anonymous.request(method, path)).status_code == 401, (method, path)
        offer = await http.post("/sessions/nope/webrtc", json={"sdp": "x", "type": "offer"})
        assert offer.status_code == 404 and offer.json()["detail"] == GONE.format("session")
        upload = await http.post("/sessions/nope/audio", content=wav_bytes(speech(0.1)), headers={"content-type": "audio/wav"})
        assert upload.status_code == 404 and upload.json()["detail"] == GONE.format("session")
    with pytest.raises(websockets.InvalidStatus) as refused:
        async with websockets.connect(ws_url(base, "nope", f"format=s16le&rate=16000&channels=1&token={TOKEN}")):
            pass
    assert refused.value.response.status_code == 404
    assert json.loads(refused.value.response.body)["detail"] == GONE.format("session")


def test_the_schema_holds_under_fuzzing(base: str) -> None:
    """Schemathesis on the backend's own OpenAPI: no 5xx, no response outside the schema (the fleet's ingress proxies some
    routes to its replica: their answers keep to the same schema)."""
    failures = fuzz_api(base, AUTH)
    assert failures == [], "\n".join(failures)


def test_ctrl_c_stops_the_fleet_quietly_and_closes_its_sessions(backend: tuple[str, Fleet | None]) -> None:
    base, fleet = backend
    if fleet is None:
        pytest.skip("the single server's Ctrl-C is tests/serve/test_cli_serve.py's")
    asyncio.run(_ctrl_c(base, fleet))


async def _ctrl_c(base: str, fleet: Fleet) -> None:
    async with client(base) as http:
        created = await http.post("/sessions", data={"identity": "default"})
        assert created.status_code == 201, created.text
        async with websockets.connect(ws_url(base, created.json()["id"]), additional_headers=AUTH) as ws:
            events = Events(ws)
            await events.wait_for(lambda e: e["type"] == "frames")
            started = time.monotonic()
            code = await asyncio.to_thread(fleet.ctrl_c, 60)
            print(f"stopped in {time.monotonic() - started:.1f} s")
            await events.wait_for(lambda e: e["type"] == "closed", timeout=5)  # the session closed before the fleet went
    lines = fleet.lines()
    assert code == 0, lines
    text = "\n".join(lines)
    assert "Connecting to existing Serve app" not in text and "will not be applied" not in text, text
    assert "ray.kill" not in text, text
    assert [line for line in lines if not line.startswith("avatarstream fleet: ")] == [], "only avatarstream's own lines"
    assert lines[0].startswith("avatarstream fleet: 1..1 replicas ready in ") and lines[-1] == "avatarstream fleet: stopped", lines
