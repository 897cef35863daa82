"""A live session's other outputs: WebRTC (negotiated through the session API) and RTMP to a real server."""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

import av
import httpx
import pytest
from serve_harness import FAMILIES, Events, family_overrides, running_server, s16, speech, ws_url

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "publish"))  # the publish tests' helpers
from publish_needs import require_nginx_rtmp
from rtmp_server import RtmpServer


@pytest.mark.parametrize("model", list(FAMILIES))
def test_webrtc_viewer_receives_video(tmp_path, model: str, request: pytest.FixtureRequest) -> None:
    overrides, _, size = family_overrides(model, request)
    with running_server(tmp_path, **overrides) as base:
        asyncio.run(_webrtc(base, size))


async def _webrtc(base: str, size: tuple[int, int]) -> None:
    from aiortc import RTCPeerConnection, RTCRtpReceiver, RTCSessionDescription

    async with httpx.AsyncClient(base_url=base, timeout=30) as client:
        sid = (await client.post("/sessions", data={"outputs": '{"hls": false, "webrtc": true}'})).json()["id"]
        pc = RTCPeerConnection()
        received: asyncio.Future = asyncio.get_running_loop().create_future()
        sound: asyncio.Future = asyncio.get_running_loop().create_future()

        def on_track(track) -> None:  # type: ignore[no-untyped-def]
            future = sound if track.kind == "audio" else received
            if not future.done():
                future.set_result(track)

        pc.on("track", on_track)
        transceiver = pc.addTransceiver("video", direction="recvonly")
        pc.addTransceiver("audio", direction="recvonly")
        transceiver.setCodecPreferences([c for c in RTCRtpReceiver.getCapabilities("video").codecs if c.mimeType == "video/H264"])
        await pc.setLocalDescription(await pc.createOffer())
        answer = await client.post(f"/sessions/{sid}/webrtc", json={"sdp": pc.localDescription.sdp, "type": pc.localDescription.type})
        assert answer.status_code == 200, answer.text
        await pc.setRemoteDescription(RTCSessionDescription(**answer.json()))
        track = await asyncio.wait_for(received, 10)
        frame = await asyncio.wait_for(track.recv(), 20)
        assert (frame.width, frame.height) == size
        audio = await asyncio.wait_for((await asyncio.wait_for(sound, 10)).recv(), 20)
        assert audio.sample_rate == 48000  # the session's AAC, decoded and sent as Opus
        await pc.close()
        no_webrtc = (await client.post("/sessions", data={"identity": "default"})).json()["id"]
        refused = await client.post(f"/sessions/{no_webrtc}/webrtc", json={"sdp": "x", "type": "offer"})
        assert refused.status_code == 409 and "no WebRTC output" in refused.json()["detail"]


def test_rtmp_output_reaches_the_server(tmp_path) -> None:
    require_nginx_rtmp()
    import websockets

    async def speak(base: str, url: str) -> None:
        async with httpx.AsyncClient(base_url=base, timeout=30) as client:
            created = await client.post("/sessions", data={"outputs": f'{{"hls": false, "rtmp": "{url}"}}'})
            assert created.status_code == 201, created.text
            sid = created.json()["id"]
            async with websockets.connect(ws_url(base, sid)) as ws:
                events = Events(ws)
                await ws.send(s16(speech(2.0)))
                await events.wait_for(lambda e: e["type"] == "frames" and e["first_frame"] >= 75)
                events.task.cancel()
            await client.delete(f"/sessions/{sid}")

    with RtmpServer(tmp_path / "rtmp") as rtmp, running_server(tmp_path) as base:
        asyncio.run(speak(base, rtmp.url("avatar")))
        recording = rtmp.recordings / "avatar.flv"
        deadline = time.monotonic() + 10
        while not (recording.exists() and recording.stat().st_size > 0) and time.monotonic() < deadline:
            time.sleep(0.1)
        with av.open(str(recording)) as container:
            assert sum(1 for _ in container.decode(video=0)) >= 50
