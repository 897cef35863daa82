"""`avatarstream render` with every output at once: MP4, HLS, RTMP (real nginx) and Kinesis Video Streams (local PutMedia)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from fake_kvs import CREDENTIALS, REGION, STREAM, FakeKvs
from kvs_media import decode_mkv

from avatarstream.cli.main import main
from mp4_checks import decode
from publish_needs import require_nginx_rtmp
from rtmp_server import RtmpServer
from sources.sine_files import write_sine
from stream_checks import inspect


def test_one_render_feeds_every_output(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    require_nginx_rtmp()
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", CREDENTIALS.access_key)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", CREDENTIALS.secret_key)
    audio, report_path, out, hls = tmp_path / "a.wav", tmp_path / "r.json", tmp_path / "o.mp4", tmp_path / "hls"
    write_sine(audio, "pcm_s16le", 16000, 1, 3.2)
    with FakeKvs() as kvs, RtmpServer(tmp_path / "nginx") as rtmp:
        code = main(
            [
                "render",
                "--model",
                "demo-tiny",
                "--no-progress",
                "--audio",
                str(audio),
                "--out",
                str(out),
                "--report",
                str(report_path),
                "--hls",
                str(hls),
                "--rtmp",
                rtmp.url("live"),
                "--kvs",
                STREAM,
                "--kvs-region",
                REGION,
                "--kvs-endpoint",
                kvs.endpoint_url,
            ]
        )
        assert code == 0
        assert not kvs.problems
        from_kvs = decode_mkv(kvs.mkv())
        recording = rtmp.recordings / "live.flv"
        deadline = time.monotonic() + 5
        while not recording.exists() and time.monotonic() < deadline:  # nginx writes it when the publisher leaves
            time.sleep(0.05)
        from_rtmp = inspect(recording)
    report = json.loads(report_path.read_text())
    assert report["frames"] == 80
    assert all(o["packets_dropped"] == 0 and not o["errors"] for o in report["outputs"]), report["outputs"]
    assert len(report["outputs"]) == 4
    assert len(decode(out).frames) == 80
    assert len(from_kvs.frames) == 80
    assert from_rtmp.frames == 80
    playlist = (hls / "index.m3u8").read_text()
    assert playlist.count("#EXTINF") == 4 and "#EXT-X-ENDLIST" in playlist
