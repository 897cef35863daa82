"""Ending a live session after its last words: POST /sessions/{id}/end (or the socket's ``end`` control) takes no more
audio, speaks everything queued, then closes with its video final. Speech is queued far faster than real time, so most
of it is still waiting when the end is asked for."""

from __future__ import annotations

import asyncio
import io
import json
import time

import av
import httpx
import websockets
from serve_harness import Events, running_server, s16, speech, wav_bytes, ws_url

FPS = 25


def _spoken_s(events: Events) -> float:
    """Seconds of speech in the frames the session published."""
    return sum(e["count"] * e["speech"] for e in events.frames()) / FPS


def test_end_renders_the_queued_speech_then_closes(tmp_path) -> None:
    with running_server(tmp_path) as base:
        asyncio.run(_end_after_queue(base))


async def _end_after_queue(base: str) -> None:
    async with httpx.AsyncClient(base_url=base, timeout=30) as client:
        sid = (await client.post("/sessions", data={"outputs": '{"hls": false, "file": true}'})).json()["id"]
        async with websockets.connect(ws_url(base, sid)) as ws:
            events = Events(ws)
            await events.wait_for(lambda e: e["type"] == "frames")
            await ws.send(s16(speech(4.0)))  # streamed at once: it queues
            uploaded = await client.post(f"/sessions/{sid}/audio", content=wav_bytes(speech(3.0)), headers={"Content-Type": "audio/wav"})
            assert uploaded.status_code == 202, uploaded.text

            ended = await client.post(f"/sessions/{sid}/end")
            assert ended.status_code == 202, ended.text
            answer = ended.json()
            assert answer["id"] == sid and answer["state"] == "ending"
            assert answer["remaining_s"] >= 6.0, answer  # nearly all of the 7 s was still queued
            assert (await client.get(f"/sessions/{sid}")).json()["state"] == "ending"

            late = await client.post(f"/sessions/{sid}/audio", content=wav_bytes(speech(1.0)), headers={"Content-Type": "audio/wav"})
            assert late.status_code == 409 and "ending" in late.json()["detail"]
            await ws.send(s16(speech(1.0)))
            refused = await events.wait_for(lambda e: e["type"] == "error")
            assert "ending" in refused["message"]

            closed = await events.wait_for(lambda e: e["type"] == "closed", timeout=60)
            assert closed["state"] == "done"
            assert _spoken_s(events) >= 7.0 - 2 / FPS, f"{_spoken_s(events):.2f} s of the 7 s queued were spoken"
            events.task.cancel()

        info = (await client.get(f"/sessions/{sid}")).json()
        assert info["state"] == "done" and info["stats"]["queued_audio_s"] == 0
        video = await client.get(f"/sessions/{sid}/video.mp4")
        assert video.status_code == 200
        with av.open(io.BytesIO(video.content)) as container:
            frames = sum(1 for _ in container.decode(video=0))
        assert frames == info["stats"]["frames"] and frames >= 7 * FPS  # every published frame, the last words included


def test_the_socket_end_control_ends_after_the_queue(tmp_path) -> None:
    with running_server(tmp_path) as base:
        asyncio.run(_socket_end(base))


async def _socket_end(base: str) -> None:
    async with httpx.AsyncClient(base_url=base, timeout=30) as client:
        created = await client.post("/sessions", data={"outputs": '{"hls": false, "frames_ws": true}'})
        assert created.status_code == 201, created.text
        sid = created.json()["id"]
        async with websockets.connect(ws_url(base, sid)) as ws:
            events = Events(ws)
            await ws.send(s16(speech(2.0)))
            await ws.send(json.dumps({"type": "end"}))
            closed = await events.wait_for(lambda e: e["type"] == "closed", timeout=60)
            assert closed["state"] == "done"
            assert _spoken_s(events) >= 2.0 - 2 / FPS
            events.task.cancel()


def test_a_delete_while_an_ended_session_finishes_frees_its_slot(tmp_path) -> None:
    """DELETE right after /end meets the session finalizing its outputs; cancelling that left the session holding its slot
    for good (found by make fuzz's stateful run). Here with nothing queued, so the end comes at once, several times."""
    with running_server(tmp_path) as base, httpx.Client(base_url=base, timeout=30) as client:
        for delay_s in (0.0, 0.02, 0.05, 0.08, 0.12, 0.16, 0.2, 0.25, 0.3, 0.4):  # across the end's phases
            sid = client.post("/sessions", data={"outputs": '{"hls": true, "file": true}'}).json()["id"]
            assert client.post(f"/sessions/{sid}/end").status_code == 202
            time.sleep(delay_s)
            assert client.delete(f"/sessions/{sid}").status_code == 200
        assert client.get("/healthz").json()["sessions"] == 0
