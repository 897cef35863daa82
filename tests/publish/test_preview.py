"""The preview page plays the live stream in a real headless Chromium, over HLS and over WebRTC."""

from __future__ import annotations

import hashlib
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from avatarstream.errors import PublishError
from avatarstream.publish.preview import PreviewServer
from avatarstream.publish.preview.server import STATIC
from avatarstream.publish.publisher import Publisher
from avatarstream.publish.settings import EncoderSettings
from avatarstream.publish.sinks import HlsSink
from mp4_checks import make_chunks
from publish_browser import chromium_page
from webrtc_watch import LOUD, Viewer, brightness

SETTINGS = EncoderSettings(width=320, height=240, fps=25, preset="ultrafast")
HLSJS_SHA256 = "482cccb3a224554f64d8c2cf0d335dba4a3819bdb726afbfddfe15de4c277d82"  # hls.js 1.7.4 dist/hls.light.min.js


AUDIO_PACKETS = """async () => {
  let received = 0;
  (await window.previewPeer.getStats()).forEach((r) => { if (r.type === "inbound-rtp" && r.kind === "audio") received = r.packetsReceived; });
  return received;
}"""


def play(tmp_path: Path, mode: str, seconds: int = 6) -> dict:
    """Open the page first, then publish one second of video per second; return what the page measured."""
    preview = PreviewServer(tmp_path / "hls", port=0)
    publisher = Publisher(SETTINGS, [HlsSink(tmp_path / "hls"), preview])
    with publisher, chromium_page(tmp_path / "profile") as page:
        failed: list[str] = []  # answers over 400 and console errors: the page waits for the first segment without 404s
        page.on("response", lambda r: r.status >= 400 and failed.append(f"{r.status} {r.url}"))
        page.on("console", lambda m: m.type == "error" and failed.append(f"console: {m.text}"))
        page.goto(f"{preview.url}?mode={mode}")
        chunks = make_chunks([25] * seconds, SETTINGS.width, SETTINGS.height)
        first_chunk_at = time.time()
        times = []
        for chunk in chunks:
            publisher.submit(chunk)
            time.sleep(1.0)
            times.append(page.evaluate("document.getElementById('video').currentTime"))
        stats = page.evaluate("({...window.previewStats, origin: performance.timeOrigin})")
        stats["audioPackets"] = page.evaluate(AUDIO_PACKETS) if mode == "webrtc" else None
        shown = page.inner_text("#ttff"), page.inner_text("#fps")
    assert stats["error"] is None, stats["error"]
    assert stats["ttffMs"] is not None, f"{mode}: no frame was ever shown"
    return {
        "first_frame_after_s": (stats["origin"] + stats["ttffMs"]) / 1000 - first_chunk_at,
        "fps": stats["fps"],
        "frames": stats["frames"],
        "times": times,
        "shown": shown,
        "audio_packets": stats["audioPackets"],
        "failed": failed,
    }


def test_hls_plays_in_chromium(tmp_path: Path) -> None:
    result = play(tmp_path, "hls")
    assert result["failed"] == [], result["failed"]
    assert result["first_frame_after_s"] < 4.0, result  # a 1 s segment must exist first: ~2 s expected
    advancing = [b - a for a, b in zip(result["times"][-3:], result["times"][-2:])]
    assert all(0.5 < step < 1.5 for step in advancing), result["times"]
    assert result["fps"] >= 15, result
    assert result["shown"][0].endswith(" s") and int(result["shown"][1]) >= 15


def test_webrtc_plays_in_chromium(tmp_path: Path) -> None:
    result = play(tmp_path, "webrtc")
    assert result["failed"] == [], result["failed"]
    assert result["first_frame_after_s"] < 4.0, result
    assert result["frames"] >= 50, result  # the keyframe-aligned, passed-through H.264 decodes
    assert result["audio_packets"] >= 100, result  # Opus at 50 packets a second
    assert result["fps"] >= 15, result


def get(url: str) -> tuple[int, bytes, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, response.read(), response.headers["Content-Type"]
    except urllib.error.HTTPError as err:
        return err.code, b"", ""


def test_server_routes(tmp_path: Path) -> None:
    (tmp_path / "hls").mkdir()
    (tmp_path / "hls" / "index.m3u8").write_text("#EXTM3U\n")
    (tmp_path / "secret.txt").write_text("no")
    server = PreviewServer(tmp_path / "hls", port=0)
    try:
        assert server.url.startswith("http://127.0.0.1:")
        status, body, kind = get(server.url)
        assert status == 200 and b"preview.js" in body and kind == "text/html"
        assert get(server.url + "static/hls.light.min.js")[0] == 200
        assert get(server.url + "hls/index.m3u8")[1:] == (b"#EXTM3U\n", "application/vnd.apple.mpegurl")
        assert get(server.url + "status") == (200, b'{"hls_ready": true}', "application/json")  # what the page waits for
        assert get(server.url + "hls/seg00009.m4s")[0] == 404  # not written yet
        assert get(server.url + "hls/../secret.txt")[0] == 404
        assert get(server.url + "hls/%2e%2e/secret.txt")[0] == 404
        request = urllib.request.Request(server.url + "offer", data=b"{}", headers={"Content-Type": "application/json"})
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=5)
        assert refused.value.code == 400
    finally:
        server.close()


def test_status_says_the_playlist_is_not_there_yet(tmp_path: Path) -> None:
    server = PreviewServer(tmp_path / "hls", port=0)
    try:
        assert get(server.url + "status") == (200, b'{"hls_ready": false}', "application/json")
    finally:
        server.close()


def test_port_in_use_is_a_clear_error(tmp_path: Path) -> None:
    first = PreviewServer(tmp_path, port=0)
    try:
        with pytest.raises(PublishError, match=f"cannot serve the preview on 127.0.0.1:{first.port}.*--preview HOST:PORT"):
            PreviewServer(tmp_path, port=first.port)
    finally:
        first.close()


def test_vendored_hlsjs_is_the_pinned_release() -> None:
    data = (STATIC / "hls.light.min.js").read_bytes()
    assert hashlib.sha256(data).hexdigest() == HLSJS_SHA256
    assert b'"1.7.4"' in data
    assert (STATIC / "hls.js-LICENSE").is_file()


def test_webrtc_carries_the_sound_in_sync_with_the_picture(tmp_path: Path) -> None:
    """Black and silent for 2 s, then white with a tone: a viewer hears the tone when it sees the white."""
    import asyncio
    import json

    import numpy as np

    from avatarstream.publish.media import MediaChunk

    fps, rate = 25, 48000
    chunks = []
    for second in range(6):
        loud = second >= 2
        frames = np.full((fps, 48, 64, 3), 230 if loud else 10, np.uint8)
        t = np.arange(second * rate, (second + 1) * rate) / rate
        audio = np.repeat((0.5 * np.sin(2 * np.pi * 440 * t) * loud).astype(np.float32)[None], 2, axis=0)
        chunks.append(MediaChunk(second * fps, frames, audio))

    async def watch(url: str, publish) -> tuple[float, float, int]:  # type: ignore[no-untyped-def]
        viewer = Viewer(("video", "audio"), video_codec="video/H264")
        offer = json.dumps(await viewer.offer()).encode()
        request = urllib.request.Request(url + "offer", data=offer, headers={"Content-Type": "application/json"})
        await viewer.answer(await asyncio.to_thread(lambda: json.loads(urllib.request.urlopen(request, timeout=20).read())))
        viewer.record(brightness)
        publishing = asyncio.create_task(asyncio.to_thread(publish))
        seen, heard = await asyncio.gather(viewer.wait_for("video", lambda v: v > 128), viewer.wait_for("audio", lambda v: v > LOUD))
        await publishing
        await viewer.close()
        assert viewer.audio.sample_rate is not None
        return seen, heard, viewer.audio.sample_rate

    preview = PreviewServer(tmp_path / "hls", port=0)
    publisher = Publisher(SETTINGS, [HlsSink(tmp_path / "hls"), preview])
    with publisher:

        def publish() -> None:  # one second of media per second, as a live session publishes
            for chunk in chunks:
                publisher.submit(
                    MediaChunk(chunk.first_frame, np.ascontiguousarray(np.resize(chunk.frames, (fps, SETTINGS.height, SETTINGS.width, 3))), chunk.audio)
                )
                time.sleep(1.0)

        seen, heard, sound_rate = asyncio.run(watch(preview.url, publish))
    print(f"\nwebrtc: tone heard {heard - seen:+.3f} s after the white picture")
    assert sound_rate == 48000
    assert abs(heard - seen) < 0.25, f"the tone arrived {heard - seen:+.3f} s after the white picture"
