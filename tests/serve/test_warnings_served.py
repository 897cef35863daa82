"""Warnings about a session's inputs reach API clients (the session's JSON) and operators (the structured log), not stderr."""

from __future__ import annotations

import json
import logging

import httpx
import numpy as np
import pytest
import websockets.sync.client
from PIL import Image
from serve_harness import running_server, s16, speech, wav_bytes, ws_url

from avatarstream.families.demo_reference import PHOTO_NOTE
from avatarstream.input_warnings import audio_rate_warning
from avatarstream.serve.logs import JsonFormatter

RANDOM = "this model has random weights"


def _log_lines(caplog: pytest.LogCaptureFixture, name: str) -> list[dict]:
    """The JSON lines the server logged for event ``name``, as its log handler writes them."""
    formatter = JsonFormatter()
    return [json.loads(formatter.format(r)) for r in caplog.records if r.name == "avatarstream.serve" and r.getMessage() == name]


def _photo_png() -> bytes:
    import io

    rng = np.random.default_rng(0)
    pixels = np.clip(np.kron(rng.uniform(0, 255, (16, 16, 3)), np.ones((16, 16, 1))) + rng.normal(0, 4, (256, 256, 3)), 0, 255)
    buffer = io.BytesIO()
    Image.fromarray(pixels.astype(np.uint8)).save(buffer, format="PNG")
    return buffer.getvalue()


def test_session_json_and_log_carry_the_warnings(tmp_path, caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]) -> None:
    caplog.set_level(logging.INFO, logger="avatarstream.serve")
    low = wav_bytes(speech(0.5, 8000), 8000)
    with running_server(tmp_path) as base, httpx.Client(base_url=base, timeout=30) as client:
        (ready,) = _log_lines(caplog, "server ready")
        assert [w[: len(RANDOM)] for w in ready["warnings"]] == [RANDOM] and ready["level"] == "warning"
        model_warning = ready["warnings"][0]

        created = client.post("/sessions")
        assert created.status_code == 201, created.text
        sid, log_id = created.json()["id"], created.json()["log_id"]
        assert created.json()["warnings"] == [model_warning]  # every session of this server hears it
        (opened,) = _log_lines(caplog, "session opened")
        assert opened["session"] == log_id and opened["warnings"] == [model_warning]

        assert client.post(f"/sessions/{sid}/audio", files={"audio": ("low.wav", low, "audio/wav")}).status_code == 202
        rate = audio_rate_warning(8000, 16000)
        assert client.get(f"/sessions/{sid}").json()["warnings"] == [model_warning, rate]
        assert client.post(f"/sessions/{sid}/audio", files={"audio": ("low.wav", low, "audio/wav")}).status_code == 202
        (logged,) = _log_lines(caplog, "session warning")  # once, however often the cause comes again
        assert logged["session"] == log_id and logged["warning"] == rate and logged["level"] == "warning"
        assert client.delete(f"/sessions/{sid}").json()["warnings"] == [model_warning, rate]
        assert client.get(f"/sessions/{sid}").json()["warnings"] == [model_warning, rate]  # the ended record keeps them

        streamed = client.post("/sessions").json()["id"]
        with websockets.sync.client.connect(ws_url(base, streamed, "format=s16le&rate=12000&channels=1")) as ws:
            ws.send(s16(speech(0.2, 12000)))
        assert client.get(f"/sessions/{streamed}").json()["warnings"] == [model_warning, audio_rate_warning(12000, 16000)]
        client.delete(f"/sessions/{streamed}")

        job = client.post("/jobs", files={"audio": ("low.wav", low, "audio/wav")})
        assert job.status_code == 202 and job.json()["warnings"] == [model_warning, rate]  # known when the job is created
    assert RANDOM not in capfd.readouterr().err  # in the JSON log, never as a bare line on stderr


def test_a_photo_on_the_demo_weights_is_answered_with_advice(tmp_path) -> None:
    with running_server(tmp_path, model="demo") as base, httpx.Client(base_url=base, timeout=30) as client:
        created = client.post("/sessions", files={"reference": ("face.png", _photo_png(), "image/png")})
        assert created.status_code == 201, created.text
        assert created.json()["warnings"] == [PHOTO_NOTE]
        client.delete(f"/sessions/{created.json()['id']}")
        plain = client.post("/sessions")
        assert plain.json()["warnings"] == []  # the bundled avatar, trained weights: nothing to say
        client.delete(f"/sessions/{plain.json()['id']}")
