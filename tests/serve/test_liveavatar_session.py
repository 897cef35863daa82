"""A live liveavatar session through the real server: frames before speech, speech frames after it, time to first frame."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import websockets
from serve_harness import Events, running_server, send_paced, speech, ws_url

OPTIONS = {"size": [64, 64], "cache_blocks": 1, "audio_window_s": 1.0, "audio_lookahead": 4}


def test_a_live_session_streams_speech_frames(tmp_path: Path, tiny_liveavatar: Path) -> None:
    with running_server(tmp_path, model="liveavatar", weights=tiny_liveavatar, model_options=OPTIONS) as base:
        asyncio.run(_session(base))


async def _session(base: str) -> None:
    async with httpx.AsyncClient(base_url=base, timeout=120) as client:
        created = await client.post("/sessions", data={"identity": "default", "outputs": '{"file": true}'})
        assert created.status_code == 201, created.text
        sid = created.json()["id"]
        async with websockets.connect(ws_url(base, sid)) as ws:
            events = Events(ws)
            await events.wait_for(lambda e: e["type"] == "frames", timeout=120)  # idle frames before any speech
            await send_paced(ws, speech(2.0), piece_s=0.1)
            await events.wait_for(lambda e: e["type"] == "frames" and e["speech"] > 0, timeout=120)
            stats = (await client.get(f"/sessions/{sid}")).json()["stats"]
            print(f"\nliveavatar live session (tiny, CPU): ttff {stats['ttff_s']:.3f} s, {stats['fps']:.1f} fps, underruns {stats['underruns']}")
            assert stats["ttff_s"] is not None and stats["ttff_s"] > 0
            await events.wait_for(lambda _: sum(e["count"] for e in events.frames() if e["speech"] > 0) >= 25, timeout=120)  # a second of speech
            events.task.cancel()
        closed = await client.delete(f"/sessions/{sid}")
        assert closed.status_code == 200 and closed.json()["state"] == "closed"
