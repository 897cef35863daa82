"""One API shape: audio uploads as POST /jobs takes them, outputs that say what is written, the default avatar of render,
log lines that name sessions as the API does, and every WebSocket message in the schema."""

from __future__ import annotations

import json
import logging
import time
import typing
from pathlib import Path

import av
import httpx
import numpy as np
import pytest
from serve_harness import running_server, speech, wav_bytes

import avatarstream
from avatarstream.families.options import GenerationOptions
from avatarstream.serve.ws_messages import CLIENT_MESSAGES, SERVER_EVENTS


def _wait_done(client: httpx.Client, url: str) -> dict:
    deadline = time.monotonic() + 60
    while (info := client.get(url).json())["state"] == "running":
        assert time.monotonic() < deadline
        time.sleep(0.05)
    return info


def _frames(path: Path) -> np.ndarray:
    with av.open(str(path)) as container:
        return np.stack([f.to_ndarray(format="rgb24") for f in container.decode(video=0)])


def test_session_audio_takes_a_multipart_upload_like_jobs(tmp_path: Path) -> None:
    with running_server(tmp_path) as base, httpx.Client(base_url=base, timeout=30) as client:
        sid = client.post("/sessions").json()["id"]
        form = client.post(f"/sessions/{sid}/audio", files={"audio": ("a.wav", wav_bytes(speech(1.0)), "audio/wav")})
        assert form.status_code == 202, form.text
        assert form.json()["clip_s"] == 1.0
        raw = client.post(f"/sessions/{sid}/audio", content=wav_bytes(speech(0.5)), headers={"content-type": "audio/wav"})
        assert raw.status_code == 202 and raw.json()["clip_s"] == 0.5  # the raw body still works
        wrong = client.post(f"/sessions/{sid}/audio", files={"clip": ("a.wav", wav_bytes(speech(0.5)), "audio/wav")})
        assert wrong.status_code == 422 and "field named 'audio'" in wrong.json()["detail"]
        not_audio = client.post(f"/sessions/{sid}/audio", files={"audio": ("a.png", b"\x89PNG....", "image/png")})
        assert not_audio.status_code == 415


def test_a_job_says_it_writes_its_file_and_logs_name_it_by_log_id(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="avatarstream.serve")
    with running_server(tmp_path) as base, httpx.Client(base_url=base, timeout=30) as client:
        job = client.post("/jobs", files={"audio": ("a.wav", wav_bytes(speech(1.0)), "audio/wav")}, data={"outputs": '{"file": false}'}).json()
        assert job["outputs"]["file"] is True and "video" in job["links"]
        live = client.post("/sessions").json()
        assert live["outputs"]["file"] is False and "video" not in live["links"]
        _wait_done(client, f"/jobs/{job['id']}")
    logged = {record.fields["session"] for record in caplog.records if "session" in getattr(record, "fields", {})}
    assert {job["log_id"], live["log_id"]} <= logged
    assert not any(job["id"] in r.getMessage() or job["id"] in json.dumps(getattr(r, "fields", {}), default=str) for r in caplog.records)


def test_identity_demo_is_the_avatar_render_uses_and_avatar_seed_works(tmp_path: Path) -> None:
    audio = tmp_path / "a.wav"
    audio.write_bytes(wav_bytes(speech(1.0)))
    options = GenerationOptions(chunk_frames=6, interp_frames=2)
    cli = avatarstream.render(audio, out=tmp_path / "render.mp4", model="demo-tiny", options=options, threads=1, preset="ultrafast")
    assert cli.complete
    with running_server(tmp_path) as base, httpx.Client(base_url=base, timeout=30) as client:
        videos = {}
        for name, data in (("demo", {"identity": "demo"}), ("avatar", {"avatar": "5"})):
            job = client.post("/jobs", files={"audio": ("a.wav", audio.read_bytes(), "audio/wav")}, data=data).json()
            assert _wait_done(client, f"/jobs/{job['id']}")["state"] == "done"
            videos[name] = tmp_path / f"{name}.mp4"
            videos[name].write_bytes(client.get(job["links"]["video"]).content)
        both = client.post(
            "/jobs", files={"audio": ("a.wav", audio.read_bytes(), "audio/wav"), "reference": ("r.png", b"x", "image/png")}, data={"avatar": "5"}
        )
        assert both.status_code == 422 and "not both" in both.json()["detail"]
        negative = client.post("/sessions", data={"avatar": "-1"})
        assert negative.status_code == 422
    rendered, served, other = _frames(tmp_path / "render.mp4"), _frames(videos["demo"]), _frames(videos["avatar"])
    assert rendered.shape == served.shape
    assert np.abs(rendered.astype(int) - served).mean() < np.abs(rendered.astype(int) - other).mean()
    assert np.array_equal(rendered, served), "same model, options, seed and default avatar: the same video"


def test_openapi_carries_the_websocket_messages(tmp_path: Path) -> None:
    with running_server(tmp_path) as base:
        spec = httpx.get(base + "/openapi.json").json()
    schemas = spec["components"]["schemas"]
    for model in (*CLIENT_MESSAGES, *SERVER_EVENTS):
        (kind,) = typing.get_args(model.model_fields["type"].annotation)
        assert schemas[model.__name__]["properties"]["type"]["const"] == kind
        assert f"`{model.__name__}`" in spec["info"]["description"]
    assert "multipart/form-data" in spec["paths"]["/sessions/{sid}/audio"]["post"]["requestBody"]["content"]
