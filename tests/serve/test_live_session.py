"""A full live session against a real server: create, stream 10 s of speech, interrupt, idle, close."""

from __future__ import annotations

import asyncio
import time

import av
import httpx
import pytest
import websockets
from serve_harness import FAMILIES, Events, family_overrides, running_server, s16, send_paced, speech, wav_bytes, ws_url

FPS = 25


@pytest.mark.parametrize("model", list(FAMILIES))
def test_full_live_session(tmp_path, model: str, request: pytest.FixtureRequest) -> None:
    overrides, chunk_frames, _ = family_overrides(model, request)
    with running_server(tmp_path, **overrides) as base:
        asyncio.run(_full_session(base, tmp_path, chunk_frames))


async def _full_session(base: str, tmp_path, chunk_frames: int) -> None:
    async with httpx.AsyncClient(base_url=base, timeout=30) as client:
        created = await client.post("/sessions", data={"identity": "default", "outputs": '{"hls": true, "file": true}'})
        assert created.status_code == 201, created.text
        info = created.json()
        sid = info["id"]
        assert info["state"] == "running" and len(sid) >= 22

        async with websockets.connect(ws_url(base, sid)) as ws:
            events = Events(ws)
            await events.wait_for(lambda e: e["type"] == "frames")  # idle frames before any speech
            started = time.monotonic()
            await send_paced(ws, speech(10.0), piece_s=0.1)
            streamed_s = time.monotonic() - started
            await events.wait_for(lambda e: e["type"] == "frames" and e["speech"] > 0)

            status = (await client.get(f"/sessions/{sid}")).json()["stats"]
            print(
                f"\nlive session: ttff {status['ttff_s']:.3f} s, first speech after {status['first_speech_latency_s']:.3f} s, "
                f"{status['fps']:.1f} fps, underruns {status['underruns']}, streamed 10 s in {streamed_s:.2f} s"
            )
            assert status["ttff_s"] is not None and status["ttff_s"] < 5
            assert status["frames"] <= (time.monotonic() - started + 2) * FPS + chunk_frames * 3  # paced: never far ahead of the clock
            # the speech still being generated arrives (later on a loaded machine, never lost)
            await events.wait_for(lambda _: sum(e["count"] for e in events.frames() if e["speech"] > 0) >= 9 * FPS, timeout=30)

            # queue a long clip at once, then interrupt it
            await ws.send(s16(speech(8.0)))  # faster than real time: it queues
            queued = await client.post(f"/sessions/{sid}/audio", content=wav_bytes(speech(8.0)), headers={"Content-Type": "audio/wav"})
            assert queued.status_code == 202, queued.text
            await asyncio.sleep(1.0)
            assert (await client.get(f"/sessions/{sid}")).json()["stats"]["speaking"]
            cut = await client.post(f"/sessions/{sid}/interrupt")
            assert cut.status_code == 200
            done = cut.json()
            assert done["dropped_s"] > 10
            assert done["idle_in_s"] <= chunk_frames / FPS + 0.05  # the avatar is idle again within one chunk
            await events.wait_for(lambda e: e["type"] == "interrupted")

            # idle: frames keep coming, without speech, and they move
            idle_start = done["idle_from_frame"]
            await events.wait_for(lambda e: e["type"] == "frames" and e["first_frame"] >= idle_start + 2 * FPS, timeout=10)
            idle = [e for e in events.frames() if e["first_frame"] >= idle_start]
            assert idle and all(e["speech"] == 0 for e in idle)
            assert sum(e["count"] for e in idle) >= 2 * FPS
            assert all(e["motion"] > 0 for e in idle), "a frozen frame while idle"

            playlist = await client.get(f"/sessions/{sid}/hls/index.m3u8")
            assert playlist.status_code == 200 and "#EXTM3U" in playlist.text
            metrics = (await client.get("/metrics")).text
            assert "avatarstream_time_to_first_frame_seconds_count" in metrics and 'avatarstream_sessions{mode="live"} 1.0' in metrics
            events.task.cancel()

        closed = await client.delete(f"/sessions/{sid}")
        assert closed.status_code == 200 and closed.json()["state"] == "closed"
        assert (await client.get(f"/sessions/{sid}/hls/index.m3u8")).status_code == 404
        video = await client.get(f"/sessions/{sid}/video.mp4")
        assert video.status_code == 200
        path = tmp_path / "session.mp4"
        path.write_bytes(video.content)
        with av.open(str(path)) as container:
            frames = sum(1 for _ in container.decode(video=0))
        assert frames >= closed.json()["stats"]["frames"] - chunk_frames
        assert (await client.get("/healthz")).json()["sessions"] == 0
