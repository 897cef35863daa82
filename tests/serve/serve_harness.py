"""A real server on a free loopback port, in a thread of the test process, with real clients."""

from __future__ import annotations

import asyncio
import json
import math
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

import numpy as np
import uvicorn

from avatarstream.serve import ServeSettings, create_app
from avatarstream.serve.ws_messages import SERVER_EVENTS

RATE = 16000
EVENT_MODELS = {model.model_fields["type"].default: model for model in SERVER_EVENTS}
TOKEN = "test-token-0123456789"
SMALL_CHUNKS = {"chunk_frames": 6, "interp_frames": 2}  # demo-tiny's options as the server tests run it
#: Each family as the server tests run it (on the tiny infinitetalk checkpoint), the frames one of its chunks adds,
#: and its frame size (width, height).
FAMILIES = {
    "demo-tiny": ({}, 6, (64, 64)),
    "infinitetalk": ({"model": "infinitetalk", "model_options": {"preset": "flashtalk", "size": [48, 32], "audio_window_s": 2.0}}, 33 - 5, (48, 32)),
}


def family_overrides(model: str, request: object) -> tuple[dict[str, object], int, tuple[int, int]]:
    """Server settings for ``model``, its chunk length and frame size; infinitetalk's weights come from the tiny checkpoint."""
    overrides, chunk_frames, size = FAMILIES[model]
    if model == "infinitetalk":
        overrides = {**overrides, "weights": request.getfixturevalue("tiny_original").base.parent}  # type: ignore[attr-defined]
    return overrides, chunk_frames, size


@contextmanager
def running_server(tmp_path: Path, **overrides: object) -> Iterator[str]:
    """Yield the base URL of a live server (demo-tiny, small chunks) that stops when the block ends."""
    settings = ServeSettings(model="demo-tiny", model_options=SMALL_CHUNKS, port=0, work_dir=tmp_path / "work", preset="ultrafast", threads=1)
    settings = replace(settings, **overrides)
    app = create_app(settings)
    config = uvicorn.Config(
        app, host="127.0.0.1", port=0, log_level=os.environ.get("SERVE_TEST_LOG", "warning"), access_log=False, ws_max_size=settings.max_upload_bytes
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="test-uvicorn", daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the test server did not start")
        time.sleep(0.02)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(30)


def speech(seconds: float, rate: int = RATE) -> np.ndarray:
    """A tone whose loudness rises and falls like syllables, mono float32."""
    t = np.arange(round(seconds * rate)) / rate
    return (0.5 * np.sin(2 * math.pi * 220 * t) * (0.5 + 0.5 * np.sin(2 * math.pi * 3 * t))).astype(np.float32)


def s16(samples: np.ndarray) -> bytes:
    return (np.clip(samples, -1, 1) * 32767).astype("<i2").tobytes()


async def send_paced(ws: object, samples: np.ndarray, piece_s: float = 0.1, rate: int = RATE) -> None:
    """Send PCM in real-time-sized pieces at real-time speed, as a microphone would."""
    step = round(piece_s * rate)
    start = time.monotonic()
    for i, offset in enumerate(range(0, samples.size, step)):
        await ws.send(s16(samples[offset : offset + step]))  # type: ignore[attr-defined]
        await asyncio.sleep(max(0.0, start + (i + 1) * piece_s - time.monotonic()))


def wav_bytes(samples: np.ndarray, rate: int = RATE) -> bytes:
    """A mono 16-bit WAV file in memory."""
    import io
    import wave

    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(rate)
        out.writeframes(s16(samples))
    return buffer.getvalue()


def ws_url(base: str, sid: str, query: str = "format=s16le&rate=16000&channels=1") -> str:
    return base.replace("http://", "ws://") + f"/sessions/{sid}/audio?{query}"


class Events:
    """Collects a session's WebSocket events in the background."""

    def __init__(self, ws: object) -> None:
        self.ws = ws
        self.items: list[dict] = []
        self.task = asyncio.create_task(self._read())

    async def _read(self) -> None:
        async for message in self.ws:  # type: ignore[attr-defined]
            event = json.loads(message)
            EVENT_MODELS[event["type"]].model_validate(event)  # every message is one the protocol documents
            self.items.append(event)

    def frames(self) -> list[dict]:
        return [e for e in self.items if e["type"] == "frames"]

    async def wait_for(self, predicate, timeout: float = 20.0) -> dict:  # type: ignore[no-untyped-def]
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for item in self.items:
                if predicate(item):
                    return item
            if self.task.done() and not self.task.cancelled() and self.task.exception() is not None:
                raise AssertionError(f"the event reader stopped: {self.task.exception()!r}; got {self.items[-5:]}")
            await asyncio.sleep(0.05)
        raise AssertionError(f"no such event within {timeout} s; got {self.items[-5:]}")
