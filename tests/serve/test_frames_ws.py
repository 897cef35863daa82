"""The frames WebSocket of a live session: raw frames with their audio, as docs/api.md describes them."""

from __future__ import annotations

import asyncio
import json
import struct
from pathlib import Path

import httpx
import pytest
import websockets
from serve_harness import TOKEN, running_server, s16, speech, ws_url

HEADERS = {"Authorization": f"Bearer {TOKEN}"}


def frames_url(base: str, sid: str, token: str = TOKEN) -> str:
    return base.replace("http://", "ws://") + f"/sessions/{sid}/frames?token={token}"


async def watch(base: str, sid: str, client: httpx.Client) -> tuple[dict, list[tuple[dict, int, int]], int | None]:
    """The stream message, (header, picture bytes, audio bytes) of the frames until the session is closed, and the close code."""
    async with websockets.connect(frames_url(base, sid), max_size=None) as frames, websockets.connect(ws_url(base, sid) + f"&token={TOKEN}") as audio:
        stream = json.loads(await frames.recv())
        got: list[tuple[dict, int, int]] = []
        while len(got) < 40:
            if len(got) == 6:  # a few idle frames first
                await audio.send(s16(speech(1.0)))
            data = await frames.recv()
            (size,) = struct.unpack_from("<I", data)
            header = json.loads(data[4 : 4 + size])
            picture = stream["width"] * stream["height"] * 3
            got.append((header, picture, len(data) - 4 - size - picture))
        await asyncio.to_thread(client.delete, f"/sessions/{sid}")
        with pytest.raises(websockets.ConnectionClosed) as closed:
            while True:
                await frames.recv()
        return stream, got, closed.value.rcvd.code if closed.value.rcvd else None


def test_frames_come_raw_with_their_audio(tmp_path: Path) -> None:
    with running_server(tmp_path, token=TOKEN) as base, httpx.Client(base_url=base, headers=HEADERS, timeout=30) as client:
        created = client.post("/sessions", data={"outputs": json.dumps({"hls": False, "frames_ws": True})})
        assert created.status_code == 201, created.text
        info = created.json()
        assert info["links"]["frames_ws"] == f"/sessions/{info['id']}/frames"
        stream, got, code = asyncio.run(watch(base, info["id"], client))
        assert client.post("/sessions", data={"outputs": json.dumps({"hls": False})}).status_code == 422  # no output at all
    assert stream == {"type": "stream", "fps": 25, "width": 64, "height": 64, "sample_rate": 48000, "channels": 2}
    indices = [header["frame"] for header, _, _ in got]
    assert indices == list(range(indices[0], indices[0] + len(got)))  # every frame, in order
    assert all(header["audio_samples"] == 48000 // 25 and audio == 1920 * 2 * 2 for header, _, audio in got)  # 1/fps of s16 stereo
    assert all(header["speech"] == 0 for header, _, _ in got[:6]) and any(header["speech"] > 0 for header, _, _ in got[6:])  # idle, then the speech
    assert code == 1000


def test_a_wrong_token_is_refused(tmp_path: Path) -> None:
    async def refused(base: str, sid: str) -> int:
        with pytest.raises(websockets.InvalidStatus) as answer:
            async with websockets.connect(frames_url(base, sid, "wrong")):
                pass
        return answer.value.response.status_code

    with running_server(tmp_path, token=TOKEN) as base, httpx.Client(base_url=base, headers=HEADERS, timeout=30) as client:
        sid = client.post("/sessions").json()["id"]
        assert asyncio.run(refused(base, sid)) == 401
        assert client.delete(f"/sessions/{sid}").status_code == 200
