"""The remote engine: a live session of ``avatarstream serve``, driven over its HTTP and WebSocket API (docs/api.md).

``start`` opens a session (no encoded outputs: the frames come back raw), its audio WebSocket (speech in as float32
PCM at AUDIO_RATE, ``interrupt`` controls, events out) and its frames WebSocket (every frame with its audio and its
share of speech). The arguments are checked when it is made, and the server is asked whether it is there and whether it
needs a token, so a wrong address is an error before an agent's pipeline starts.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import struct
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from pathlib import Path
from typing import Any

import aiohttp
import numpy as np

from avatarstream.errors import InputError
from avatarstream.integrations.engine import AUDIO_RATE, AvatarFrame

PIECE_S = 0.5  # speech per audio message, well under any server's message limit
INTERRUPT_WAIT_S = 5.0
MAX_FRAME_BYTES = 64 * 2**20  # one frame's message: a 4K RGB picture and its audio fit


class RemoteEngine:
    """A live session on a server; see the module's docstring."""

    def __init__(
        self,
        server_url: str,
        *,
        token: str | None = None,
        reference: str | os.PathLike[str] | None = None,
        model_options: Mapping[str, Any] | None = None,
        prompt: str = "",
        seed: int = 0,
        identity: str = "default",
    ) -> None:
        url = urllib.parse.urlsplit(server_url)
        if url.scheme not in ("http", "https") or not url.netloc:
            raise InputError(f"server_url {server_url!r} is not an http(s) address; give the one `avatarstream serve` prints, e.g. http://127.0.0.1:8000")
        if reference is not None and not Path(reference).is_file():
            raise InputError(f"reference image {reference} not found; give a PNG or JPEG file, or None for the server's default avatar")
        if seed < 0:
            raise InputError(f"seed must be 0 or more, got {seed}")
        self.base = server_url.rstrip("/")
        self._headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.name = _check_server(self.base, token)
        self._form = {"model_options": json.dumps(dict(model_options or {})), "prompt": prompt, "seed": str(seed), "identity": identity}
        self._form["outputs"] = json.dumps({"hls": False, "frames_ws": True})  # nothing to encode: the frames come back raw
        self._reference = Path(reference) if reference is not None else None
        self._http: aiohttp.ClientSession | None = None
        self._audio: aiohttp.ClientWebSocketResponse | None = None
        self._frames_ws: aiohttp.ClientWebSocketResponse | None = None
        self._events: asyncio.Task[None] | None = None
        self._interrupted: asyncio.Queue[int] = asyncio.Queue()
        self.session_id: str | None = None
        self._stream: dict[str, Any] = {}

    @property
    def fps(self) -> int:
        return int(self._started()["fps"])

    @property
    def frame_size(self) -> tuple[int, int]:
        stream = self._started()
        return int(stream["width"]), int(stream["height"])

    def _started(self) -> dict[str, Any]:
        if not self._stream:
            raise RuntimeError("the server says the frame size and rate when the session opens: start() the engine first")
        return self._stream

    async def start(self) -> None:
        self._http = aiohttp.ClientSession(headers=self._headers)
        form = aiohttp.FormData(self._form)
        with contextlib.ExitStack() as files:
            if self._reference is not None:
                form.add_field("reference", files.enter_context(self._reference.open("rb")), filename=self._reference.name)
            async with self._http.post(f"{self.base}/sessions", data=form) as response:
                body = await response.json(content_type=None)
                if response.status != 201:
                    await self.aclose()
                    raise InputError(f"the server refused the session ({response.status}): {body.get('detail', body)}")
        self.session_id = body["id"]
        links = body["links"]  # a fleet's may point at the replica that runs the session
        self._audio = await self._http.ws_connect(self._ws_url(links["audio_ws"]) + f"?format=f32le&rate={AUDIO_RATE}&channels=1")
        self._frames_ws = await self._http.ws_connect(self._ws_url(links["frames_ws"]), max_msg_size=MAX_FRAME_BYTES)
        self._stream = json.loads((await self._frames_ws.receive()).data)
        self._events = asyncio.create_task(self._read_events(self._audio))

    def _ws_url(self, link: str) -> str:
        return urllib.parse.urljoin(self.base + "/", link).replace("http", "ws", 1)

    async def _read_events(self, audio: aiohttp.ClientWebSocketResponse) -> None:
        async for message in audio:
            if message.type == aiohttp.WSMsgType.TEXT:
                event = json.loads(message.data)
                if event.get("type") == "interrupted":
                    self._interrupted.put_nowait(int(event["idle_from_frame"]))

    def _socket(self) -> aiohttp.ClientWebSocketResponse:
        if self._audio is None:
            raise RuntimeError("start() the engine first")
        return self._audio

    async def push(self, samples: np.ndarray) -> None:
        audio = self._socket()
        data = np.ascontiguousarray(samples, dtype="<f4")
        step = round(PIECE_S * AUDIO_RATE)
        for offset in range(0, data.size, step):
            await audio.send_bytes(data[offset : offset + step].tobytes())

    async def interrupt(self) -> int:
        while not self._interrupted.empty():  # an answer to someone else's interrupt
            self._interrupted.get_nowait()
        await self._socket().send_str(json.dumps({"type": "interrupt"}))
        try:
            return await asyncio.wait_for(self._interrupted.get(), INTERRUPT_WAIT_S)
        except TimeoutError:
            return 0  # the speech is dropped all the same; only the frames before it cannot be told apart

    async def end(self) -> float:
        """POST /sessions/{id}/end: the server speaks what is queued, then closes the session and its frames socket."""
        if self._http is None or self.session_id is None:
            raise RuntimeError("start() the engine first")
        async with self._http.post(f"{self.base}/sessions/{self.session_id}/end") as response:
            body = await response.json(content_type=None)
            if response.status != 202:
                raise InputError(f"the server refused to end the session ({response.status}): {body.get('detail', body)}")
        return float(body["remaining_s"])

    def frames(self) -> AsyncIterator[AvatarFrame]:
        return self._frames_of()

    async def _frames_of(self) -> AsyncGenerator[AvatarFrame, None]:
        if self._frames_ws is None:
            raise RuntimeError("start() the engine first")
        width, height, channels = int(self._stream["width"]), int(self._stream["height"]), int(self._stream["channels"])
        rate = int(self._stream["sample_rate"])
        if rate != AUDIO_RATE:
            raise InputError(f"the server sends audio at {rate} Hz; this client takes {AUDIO_RATE} Hz")
        async for message in self._frames_ws:
            if message.type != aiohttp.WSMsgType.BINARY:
                continue
            data: bytes = message.data
            (size,) = struct.unpack_from("<I", data)
            header = json.loads(data[4 : 4 + size])
            image = np.frombuffer(data, np.uint8, height * width * 3, 4 + size).reshape(height, width, 3)
            audio = np.frombuffer(data, "<i2", int(header["audio_samples"]) * channels, 4 + size + image.nbytes).reshape(-1, channels)
            yield AvatarFrame(int(header["frame"]), image, audio.astype(np.float32).mean(axis=1) / 32768.0, float(header["speech"]))

    async def aclose(self) -> None:
        """Close the session (the server frees it at once) and the sockets."""
        for ws in (self._audio, self._frames_ws):
            if ws is not None:
                await ws.close()
        if self._events is not None:
            self._events.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._events
        if self._http is not None:
            if self.session_id is not None:
                with contextlib.suppress(aiohttp.ClientError):
                    async with self._http.delete(f"{self.base}/sessions/{self.session_id}"):
                        pass
            await self._http.close()
        self._http = self._audio = self._frames_ws = self._events = None
        self.session_id = None


def _check_server(base: str, token: str | None) -> str:
    """The server's model, asked of its health route; an unreachable server or a missing token is an InputError now."""
    try:
        with urllib.request.urlopen(f"{base}/healthz", timeout=10) as response:
            health = json.loads(response.read())
    except (urllib.error.URLError, OSError, ValueError) as err:
        raise InputError(f"no avatarstream server answers at {base} ({err}); start one with `avatarstream serve`, or check server_url") from None
    if health.get("auth_required") and not token:
        raise InputError(f"the server at {base} needs a token: pass token= (what it was started with, --token or AVATARSTREAM_TOKEN)")
    return str(health.get("model", "avatarstream"))
