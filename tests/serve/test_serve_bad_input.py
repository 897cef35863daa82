"""Bad requests get a 4xx with a message that says what to do, while another session runs on untouched."""

from __future__ import annotations

import asyncio
import json

import httpx
import numpy as np
import pytest
import websockets
from serve_harness import TOKEN, Events, running_server, s16, speech, wav_bytes, ws_url

AUTH = {"Authorization": f"Bearer {TOKEN}"}
LIMIT = 256 * 1024


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    with running_server(tmp_path_factory.mktemp("serve"), token=TOKEN, max_upload_bytes=LIMIT) as url:
        yield url


def test_bad_requests_leave_other_sessions_alone(base: str) -> None:
    asyncio.run(_bad_requests(base))


async def _bad_requests(base: str) -> None:
    async with httpx.AsyncClient(base_url=base, timeout=30, headers=AUTH) as client:
        victim = (await client.post("/sessions", data={"identity": "demo"})).json()["id"]
        async with websockets.connect(ws_url(base, victim), additional_headers=AUTH) as ws:
            events = Events(ws)
            await ws.send(s16(speech(2.0)))
            await events.wait_for(lambda e: e["type"] == "frames")
            before = (await client.get(f"/sessions/{victim}")).json()["stats"]["frames"]

            sid = (await client.post("/sessions", data={"identity": "demo"})).json()["id"]
            audio = f"/sessions/{sid}/audio"
            checks = [
                (await client.post(audio, content=b"hello", headers={"Content-Type": "text/plain"}), 415, "expected an audio file"),
                (
                    await client.post(audio, content=np.random.default_rng(0).bytes(20000), headers={"Content-Type": "audio/wav"}),
                    422,
                    "cannot read audio the uploaded audio",
                ),
                (await client.post(audio, content=wav_bytes(speech(10.0)), headers={"Content-Type": "audio/wav"}), 413, "larger than this server's limit"),
                (await client.post("/sessions/nope/interrupt"), 404, "no such session"),
                (await client.get(f"/jobs/{sid}"), 404, "no such job"),  # a session id opens no job
                (await client.post("/sessions", json={"identity": "demo"}), 415, "multipart/form-data"),
                (await client.post("/sessions", data={"outputs": "{nope"}), 422, "outputs"),
                (await client.post("/sessions", data={"outputs": '{"rtmp": "file:///etc/passwd"}'}), 422, "not an RTMP publish URL"),
                (await client.post("/sessions", data={"identity": "someone"}), 422, "unknown identity"),
                (
                    await client.post("/sessions", files={"reference": ("r.png", b"not an image", "image/png")}),
                    422,
                    "cannot read reference the uploaded reference",
                ),
                (await client.post("/sessions", files={"reference": ("r.txt", b"x", "text/plain")}), 415, "reference image"),
                (await client.get(f"/sessions/{sid}/hls/.env"), 404, "no such HLS file"),
                (await client.get(f"/sessions/{sid}/hls/..%2F..%2Fsession.json"), 404, "Not Found"),
                (await client.get(f"/sessions/{sid}/video.mp4"), 409, "ready when the session is closed"),
                (await client.get("/sessions/" + sid, headers={"Authorization": "Bearer wrong-token-123"}), 401, "bearer token"),
            ]
            async with httpx.AsyncClient(base_url=base, timeout=30) as anonymous:
                checks.append((await anonymous.post("/sessions", data={"identity": "demo"}), 401, "bearer token"))
                checks.append((await anonymous.get("/metrics"), 401, "bearer token"))
                assert (await anonymous.get("/healthz")).json()["auth_required"] is True
                assert (await anonymous.get("/")).status_code == 200
            for response, status, words in checks:
                assert response.status_code == status, (response.request.url, response.text)
                assert words in response.json()["detail"], response.json()
            assert checks[-3][0].headers["www-authenticate"].startswith("Bearer")

            for url, headers, status in [
                (ws_url(base, sid), {}, 401),
                (ws_url(base, "nope"), AUTH, 404),
                (ws_url(base, sid, "format=mp4"), AUTH, 422),
            ]:
                with pytest.raises(websockets.InvalidStatus) as refused:
                    async with websockets.connect(url, additional_headers=headers):
                        pass
                assert refused.value.response.status_code == status
                assert json.loads(refused.value.response.body)["detail"]

            async with websockets.connect(ws_url(base, sid, f"format=s16le&rate=16000&token={TOKEN}")) as bad:
                bad_events = Events(bad)
                await bad.send(b"\x01\x02\x03")  # half a sample
                await bad.send("not json")
                await bad_events.wait_for(lambda e: e["type"] == "error" and "whole sample frames" in e["message"])
                await bad_events.wait_for(lambda e: e["type"] == "error" and "JSON controls" in e["message"])
                bad_events.task.cancel()
            async with websockets.connect(ws_url(base, sid, "format=encoded"), additional_headers=AUTH) as clips:
                clip_events = Events(clips)
                await clips.send(b"RIFF" + bytes(100))  # a broken WAV clip
                await clip_events.wait_for(lambda e: e["type"] == "error" and "the uploaded audio" in e["message"])
                await clips.send(wav_bytes(speech(1.0)))  # a good one is spoken
                await clip_events.wait_for(lambda e: e["type"] == "frames" and e["speech"] > 0)
                assert not any("/" in e.get("message", "") for e in clip_events.items), "a server path in a message"
                clip_events.task.cancel()
            assert (await client.get(f"/sessions/{sid}")).json()["state"] == "running"  # bad data does not end a session

            victim_info = (await client.get(f"/sessions/{victim}")).json()
            assert victim_info["state"] == "running" and victim_info["stats"]["frames"] > before
            assert not [e for e in events.items if e["type"] == "error"]
            events.task.cancel()
