"""``avatarstream serve --nproc 2 --parallel sp=2`` (and ``decode``): live sessions on two processes, idle far longer than a collective may wait.

The collective timeout is 3 s here; a session pauses its speech for 6 s, and the
server then sits without a session for 6 s. Both sessions end ``closed`` with
every frame, so no rank waited inside a collective.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import av
import httpx
import pytest
import websockets

from avatarstream.benchmarks.local_server import ServerProcess
from avatarstream.runtime.launch import COLLECTIVE_TIMEOUT_ENV
from serve.serve_harness import send_paced, speech, ws_url

TOKEN = "parallel-serve-token"
TIMEOUT_S = 3.0
PAUSE_S = 2 * TIMEOUT_S
SPEECH_S = 3.0  # 2 s before the pause, 1 s after


async def _session(base: str, tmp_path: Path, name: str, pause_s: float) -> tuple[dict, int]:
    headers = {"Authorization": f"Bearer {TOKEN}"}
    async with httpx.AsyncClient(base_url=base, timeout=30, headers=headers) as client:
        created = await client.post("/sessions", data={"identity": "default", "outputs": '{"file": true}'})
        assert created.status_code == 201, created.text
        sid = created.json()["id"]
        refused = await client.post("/sessions", data={"identity": "default"})
        assert refused.status_code == 503  # one session at a time on the two processes
        async with websockets.connect(ws_url(base, sid) + f"&token={TOKEN}") as ws:
            await send_paced(ws, speech(2.0))
            await asyncio.sleep(pause_s)
            await send_paced(ws, speech(1.0))
            await asyncio.sleep(1.0)
        closed = (await client.delete(f"/sessions/{sid}")).json()
        video = await client.get(f"/sessions/{sid}/video.mp4")
        path = tmp_path / f"{name}.mp4"
        path.write_bytes(video.content)
        with av.open(str(path)) as container:
            frames = sum(1 for _ in container.decode(video=0))
        # idle frames kept coming through the pause: had they stopped, the pause would be missing, not half of it (the margin
        # is for a loaded 2-core machine, where two ranks on one core each can fall behind the wall clock)
        assert closed["stats"]["frames"] >= 25 * (SPEECH_S + pause_s / 2), closed["stats"]
        return closed, frames


@pytest.mark.parametrize("layout", ["sp=2", "decode"])
def test_live_sessions_idle_longer_than_the_collective_timeout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, layout: str) -> None:
    monkeypatch.setenv(COLLECTIVE_TIMEOUT_ENV, str(TIMEOUT_S))
    options = ["--nproc", "2", "--parallel", layout, "--model", "demo-tiny", "--threads", "1"]
    with ServerProcess(options, TOKEN, tmp_path / "server.log") as server:
        first, first_frames = asyncio.run(_session(server.url, tmp_path, "first", PAUSE_S))
        time.sleep(PAUSE_S)  # no session: the followers wait for the next one host-side
        second, second_frames = asyncio.run(_session(server.url, tmp_path, "second", 0.0))
        server.check_alive()
    for closed, frames in ((first, first_frames), (second, second_frames)):
        assert closed["state"] == "closed" and closed["error"] is None
        assert frames >= closed["stats"]["frames"] - 12  # the file holds what was published (a chunk may still be in flight)
    log = (tmp_path / "server.log").read_text()
    assert "timed out" not in log.lower() and "Traceback" not in log
