"""One API shape: audio uploads as POST /jobs takes them, outputs that say what is written, the default avatar of render,
the model's own options per session, log lines that name sessions as the API does, and every WebSocket message in the schema."""

from __future__ import annotations

import asyncio
import json
import logging
import time
import typing
from pathlib import Path

import av
import httpx
import numpy as np
import pytest
import websockets
from serve_harness import SMALL_CHUNKS, Events, running_server, speech, wav_bytes, ws_url

import avatarstream
from avatarstream.families.registry import options_class
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


def test_identity_default_is_the_avatar_render_uses_and_a_request_option_picks_another(tmp_path: Path) -> None:
    audio = tmp_path / "a.wav"
    audio.write_bytes(wav_bytes(speech(1.0)))
    cli = avatarstream.render(audio, out=tmp_path / "render.mp4", model="demo-tiny", model_options=SMALL_CHUNKS, threads=1, preset="ultrafast")
    assert cli.complete
    with running_server(tmp_path) as base, httpx.Client(base_url=base, timeout=30) as client:
        videos = {}
        for name, data in (("default", {"identity": "default"}), ("seed", {"model_options": '{"avatar": 5}'})):
            job = client.post("/jobs", files={"audio": ("a.wav", audio.read_bytes(), "audio/wav")}, data=data).json()
            assert _wait_done(client, f"/jobs/{job['id']}")["state"] == "done"
            videos[name] = tmp_path / f"{name}.mp4"
            videos[name].write_bytes(client.get(job["links"]["video"]).content)
        both = client.post(
            "/jobs",
            files={"audio": ("a.wav", audio.read_bytes(), "audio/wav"), "reference": ("r.png", b"x", "image/png")},
            data={"model_options": '{"avatar": 5}'},
        )
        assert both.status_code == 422 and "not both" in both.json()["detail"]  # the family's own rule
        negative = client.post("/sessions", data={"model_options": '{"avatar": -1}'})
        assert negative.status_code == 422 and "avatar must be at least 0" in negative.json()["detail"]
        assert client.post("/sessions", data={"identity": "demo"}).status_code == 422, "no family's name is an identity"
    rendered, served, other = _frames(tmp_path / "render.mp4"), _frames(videos["default"]), _frames(videos["seed"])
    assert rendered.shape == served.shape
    assert np.abs(rendered.astype(int) - served).mean() < np.abs(rendered.astype(int) - other).mean()
    assert np.array_equal(rendered, served), "same model, options, seed and default avatar: the same video"


def test_a_session_whose_options_change_the_chunks_gets_a_pipeline_of_its_own(tmp_path: Path) -> None:
    """The server's chunks are 6 frames with I-chunks of 2 at the seams; a session asking for 10 frames and no I-chunks gets
    exactly that while one on the server's options goes on with the server's (a pipeline built for it, over the same modules)."""

    async def chunk_sizes(base: str, sid: str) -> set[int]:
        async with websockets.connect(ws_url(base, sid)) as ws:
            events = Events(ws)
            try:
                await events.wait_for(lambda _: len(events.frames()) >= 3)
            except AssertionError as err:  # say where the session stood
                async with httpx.AsyncClient(base_url=base) as client:
                    raise AssertionError(f"{err}; the session: {(await client.get(f'/sessions/{sid}')).json()}") from None
            events.task.cancel()
            return {e["count"] for e in events.frames()[1:]}  # after the first chunk, every chunk adds chunk_frames

    with running_server(tmp_path) as base, httpx.Client(base_url=base, timeout=30) as client:
        own = client.post("/sessions", data={"model_options": json.dumps({"chunk_frames": 10, "interp_frames": 0, "avatar": 3})})
        assert own.status_code == 201, own.text
        shared = client.post("/sessions").json()
        assert asyncio.run(chunk_sizes(base, own.json()["id"])) == {10}
        assert asyncio.run(chunk_sizes(base, shared["id"])) == {4, 2}
        for info in (own.json(), shared):
            assert client.delete(f"/sessions/{info['id']}").status_code == 200
        bad = client.post("/sessions", data={"model_options": '{"chunk_frames": 0}'})
        assert bad.status_code == 422 and "chunk_frames must be between 1 and 1000" in bad.json()["detail"]


def test_openapi_carries_the_websocket_messages(tmp_path: Path) -> None:
    with running_server(tmp_path) as base:
        spec = httpx.get(base + "/openapi.json").json()
    schemas = spec["components"]["schemas"]
    for model in (*CLIENT_MESSAGES, *SERVER_EVENTS):
        (kind,) = typing.get_args(model.model_fields["type"].annotation)
        assert schemas[model.__name__]["properties"]["type"]["const"] == kind
        assert f"`{model.__name__}`" in spec["info"]["description"]
    assert "multipart/form-data" in spec["paths"]["/sessions/{sid}/audio"]["post"]["requestBody"]["content"]
    for path in ("/sessions", "/jobs"):  # the model's options: their JSON schema, and the scopes a session may set
        ref = spec["paths"][path]["post"]["requestBody"]["content"]["multipart/form-data"]["schema"]["$ref"]
        form = schemas[ref.rsplit("/", 1)[1]]["properties"]
        assert "avatar" not in form, "a family's option is no form field of its own"
        assert form["model_options"]["contentSchema"] == options_class("demo-tiny").json_schema()
        assert "`demo-tiny`" in form["model_options"]["description"] and "request: avatar" in form["model_options"]["description"]
