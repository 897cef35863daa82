"""The server's multipart forms, through a running server (demo-tiny): the body of ``POST /sessions``, ``POST /jobs``
or ``POST /sessions/{id}/audio`` (the input's first byte picks which). Whatever the body, the answer is a 2xx or a 4xx
whose ``detail`` is one line, never a 5xx; what an accepted form opens is closed again, and no session is left behind.
"""

from __future__ import annotations

import io
import wave
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import numpy as np
from PIL import Image

from avatarstream.errors import InputError
from fuzz.contract import Bounds, Breach, Run
from fuzz.target import Target
from fuzz.targets.media import codec_tag_wav
from serve.serve_harness import TOKEN, running_server

BOUNDARY = "fuzzboundary"
HEADERS = {"Authorization": f"Bearer {TOKEN}", "Content-Type": f"multipart/form-data; boundary={BOUNDARY}"}
ROUTES = ("/sessions", "/jobs", "/sessions/{sid}/audio")
FIELDS = ("audio", "reference", "identity", "model_options", "outputs", "seed", "prompt")
Part = tuple[str, bytes, str | None, str | None]  # name, content, file name, content type


def form(*parts: Part) -> bytes:
    """A multipart/form-data body with the fixed boundary."""
    out = b""
    for name, content, filename, kind in parts:
        disposition = f'form-data; name="{name}"' + (f'; filename="{filename}"' if filename else "")
        out += f"--{BOUNDARY}\r\nContent-Disposition: {disposition}\r\n".encode()
        out += (f"Content-Type: {kind}\r\n" if kind else "").encode() + b"\r\n" + content + b"\r\n"
    return out + f"--{BOUNDARY}--\r\n".encode()


def _wav(seconds: float = 0.1) -> bytes:
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(16000)
        out.writeframes((np.sin(np.arange(round(seconds * 16000)) / 4) * 9000).astype("<i2").tobytes())
    return buffer.getvalue()


def _png() -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (40, 40), (200, 120, 90)).save(buffer, format="PNG")
    return buffer.getvalue()


def _seeds() -> list[bytes]:
    audio: Part = ("audio", _wav(), "a.wav", "audio/wav")
    return [
        bytes([0]) + form(("identity", b"default", None, None), ("seed", b"3", None, None), ("outputs", b'{"frames_ws": true}', None, None)),
        bytes([0]) + form(("reference", _png(), "face.png", "image/png"), ("model_options", b'{"chunk_frames": 6}', None, None)),
        bytes([1]) + form(audio, ("outputs", b'{"hls": false}', None, None), ("prompt", b"a person talking", None, None)),
        bytes([2]) + form(audio),
        bytes([2]) + form(("audio", codec_tag_wav(0x1234), "a.wav", "audio/wav")),  # found: a 500 (no decoder for the codec)
    ]


@contextmanager
def _prepare(folder: Path) -> Iterator[tuple[Run, list[bytes]]]:
    server = running_server(folder, token=TOKEN, max_sessions=2, max_upload_bytes=256 * 1024, idle_timeout_s=24 * 3600.0)  # the kept session outlives a run
    with server as base, httpx.Client(base_url=base, timeout=30) as client:
        auth = {"Authorization": HEADERS["Authorization"]}
        kept = client.post("/sessions", data={"outputs": '{"frames_ws": true}'}, headers=auth).json()["id"]  # the session audio goes to

        def run(data: bytes) -> None:
            route = ROUTES[data[0] % len(ROUTES)] if data else ROUTES[0]
            answer = client.post(route.format(sid=kept), content=data[1:], headers=HEADERS)
            try:
                _judge(answer)
            finally:
                _close(client, route, answer, kept, auth)
                sessions = client.get("/healthz").json()["sessions"]
                if sessions > 1:
                    raise Breach(f"{sessions} sessions are open after the form's were closed (1 expected)", "sessions-left")

        yield run, _seeds()


def _judge(answer: httpx.Response) -> None:
    """A 5xx or a body that is not the documented JSON is a breach; a 4xx is the refusal (its detail the message)."""
    if answer.status_code >= 500:
        raise Breach(f"{answer.status_code} answer: {answer.text[:300]}", f"status-{answer.status_code}")
    try:
        detail = answer.json().get("detail") if answer.status_code >= 400 else None
    except ValueError as err:
        raise Breach(f"{answer.status_code} answer that is not JSON: {answer.text[:300]!r}", "not-json") from err
    if answer.status_code >= 400:
        if not isinstance(detail, str):
            raise Breach(f"{answer.status_code} answer whose detail is not a string: {answer.text[:300]}", "detail")
        raise InputError(detail)


def _close(client: httpx.Client, route: str, answer: httpx.Response, kept: str, auth: dict[str, str]) -> None:
    """Close what an accepted form opened (and drop the speech it queued), so each input starts from the same server."""
    if answer.status_code in (201, 202) and route in ("/sessions", "/jobs"):
        client.delete(f"{route}/{answer.json()['id']}", headers=auth)
    elif answer.status_code == 202:
        client.post(f"/sessions/{kept}/interrupt", headers=auth)


TARGETS = [
    Target(
        "multipart",
        _prepare,
        ("avatarstream.serve.api_sessions", "avatarstream.serve.api_jobs", "avatarstream.serve.uploads", "avatarstream.serve.context"),
        instrument=("python_multipart", "starlette.formparsers"),
        words=(
            f"--{BOUNDARY}",
            "\r\n",
            "Content-Disposition: form-data; ",
            'name="',
            'filename="',
            "Content-Type: ",
            *FIELDS,
            "audio/wav",
            "image/png",
            "default",
        ),
        # the server answers in its own threads (a job's render too): its memory is not the form's, only its time is bounded
        bounds=Bounds(seconds=5.0, rss_mib=1024),
    ),
]
