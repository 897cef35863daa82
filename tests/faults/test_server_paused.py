"""The server process stopped (SIGSTOP) for 5 s, then continued (SIGCONT): the live session goes on, its socket client
is not dropped, its frames have no gap (the pause is counted as an underrun, not rendered as a backlog), and its queue
does not grow."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
from pathlib import Path

import httpx
import numpy as np
import websockets
from serve_child import CLI, serve_argv, start_serving

PAUSE_S = 5.0


async def _session(server: subprocess.Popen[str], base: str) -> tuple[list[dict], dict, dict]:
    async with httpx.AsyncClient(base_url=base, timeout=30) as client:
        sid = (await client.post("/sessions", data={"outputs": '{"hls": false, "frames_ws": true}'})).json()["id"]
        url = base.replace("http://", "ws://") + f"/sessions/{sid}/audio?format=s16le&rate=16000&channels=1"
        events: list[dict] = []
        async with websockets.connect(url) as ws:

            async def read() -> None:
                async for message in ws:
                    events.append(json.loads(message))

            reading = asyncio.create_task(read())
            tone = (0.3 * np.sin(2 * np.pi * 220 * np.arange(16000 * 3) / 16000) * 32767).astype("<i2")
            await ws.send(tone.tobytes())  # 3 s of speech, queued
            await asyncio.sleep(1.5)
            before = (await client.get(f"/sessions/{sid}")).json()
            server.send_signal(signal.SIGSTOP)
            await asyncio.sleep(PAUSE_S)
            server.send_signal(signal.SIGCONT)
            await asyncio.sleep(3.0)
            after = (await client.get(f"/sessions/{sid}")).json()
            assert not reading.done(), "the socket was dropped"
            reading.cancel()
        return events, before, after


def test_a_paused_server_carries_on_without_gaps(tmp_path: Path) -> None:
    argv, base = serve_argv(tmp_path / "work")
    server = start_serving([*CLI, *argv], base)
    try:
        events, before, after = asyncio.run(_session(server, base))
    finally:
        server.send_signal(signal.SIGCONT)
        server.terminate()
        server.wait(60)
    frames = [e for e in events if e["type"] == "frames"]
    assert [e for e in events if e["type"] in ("error", "closed")] == []
    starts = [e["first_frame"] for e in frames]
    ends = [e["first_frame"] + e["count"] for e in frames]
    assert starts[1:] == ends[:-1], "frames are missing between chunks"
    assert after["state"] == "running" and after["stats"]["frames"] > before["stats"]["frames"] + 25  # it went on
    assert after["stats"]["underruns"] >= 1  # the pause was seen as one, and the clock moved on
    assert after["stats"]["queued_audio_s"] <= before["stats"]["queued_audio_s"]  # nothing piled up
    assert sum(e["count"] * e["speech"] for e in frames) / 25 >= 2.9  # the queued speech was all spoken, none lost
