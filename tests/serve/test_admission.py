"""Three sessions at once, each speaking; one more is refused with 503 and Retry-After."""

from __future__ import annotations

import asyncio
import contextlib

import httpx
import websockets
from serve_harness import Events, running_server, send_paced, speech, wav_bytes, ws_url


def test_three_concurrent_sessions_and_503(tmp_path) -> None:
    with running_server(tmp_path, max_sessions=3) as base:
        asyncio.run(_three_and_one_more(base))


async def _speak(base: str, sid: str) -> int:
    async with websockets.connect(ws_url(base, sid)) as ws:
        events = Events(ws)
        await send_paced(ws, speech(3.0), piece_s=0.1)
        await events.wait_for(lambda e: e["type"] == "frames" and e["speech"] > 0)
        # speech sent is never dropped, only late on a loaded machine: wait for most of it rather than for the wall clock
        with contextlib.suppress(AssertionError):
            await events.wait_for(lambda _: _speech_frames(events) >= 2.5 * 25, timeout=60)
        events.task.cancel()
        return _speech_frames(events)


def _speech_frames(events: Events) -> int:
    return sum(e["count"] for e in events.frames() if e["speech"] > 0)


async def _three_and_one_more(base: str) -> None:
    async with httpx.AsyncClient(base_url=base, timeout=30) as client:
        ids = []
        for _ in range(3):
            created = await client.post("/sessions", data={"identity": "default"})
            assert created.status_code == 201, created.text
            ids.append(created.json()["id"])
        assert len(set(ids)) == 3

        refused = await client.post("/sessions", data={"identity": "default"})
        assert refused.status_code == 503
        assert int(refused.headers["retry-after"]) > 0 and "maximum of 3 sessions" in refused.json()["detail"]
        job = await client.post("/jobs", files={"audio": ("a.wav", wav_bytes(speech(1.0)), "audio/wav")})
        assert job.status_code == 503  # batch jobs take the same slots

        speech_frames = await asyncio.gather(*(_speak(base, sid) for sid in ids))
        assert min(speech_frames) >= 2.5 * 25, speech_frames  # every session spoke, none starved by the others
        for sid in ids:
            stats = (await client.get(f"/sessions/{sid}")).json()["stats"]
            assert stats["ttff_s"] is not None

        assert "avatarstream_sessions_rejected_total 2.0" in (await client.get("/metrics")).text
        assert (await client.delete(f"/sessions/{ids[0]}")).status_code == 200
        again = await client.post("/sessions", data={"identity": "default"})  # a freed slot is usable at once
        assert again.status_code == 201
