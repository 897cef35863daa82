"""`avatarstream render --kvs` end to end: a real render streamed to the local PutMedia service."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fake_kvs import CREDENTIALS, REGION, STREAM, FakeKvs
from kvs_media import decode_mkv
from sources.sine_files import write_sine

from avatarstream.cli.main import main


def test_render_streams_every_frame_to_kinesis(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", CREDENTIALS.access_key)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", CREDENTIALS.secret_key)
    audio, report = tmp_path / "a.wav", tmp_path / "r.json"
    write_sine(audio, "pcm_s16le", 16000, 1, 3.2)
    with FakeKvs() as kvs:
        code = main([
            "render", "--model", "demo-tiny", "--no-progress", "--audio", str(audio), "--out", str(tmp_path / "o.mp4"),
            "--report", str(report), "--kvs", STREAM, "--kvs-region", REGION, "--kvs-endpoint", kvs.endpoint_url,
        ])
        assert code == 0
        assert not kvs.problems
        received = decode_mkv(kvs.mkv())
    outputs = json.loads(report.read_text())["outputs"]
    kvs_report = next(o for o in outputs if o["packets_dropped"] == 0 and "avatar-test" in o["name"])
    assert kvs_report["errors"] == []
    assert len(received.frames) == 80 == json.loads(report.read_text())["frames"]
