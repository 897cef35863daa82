"""The ingress's connection to the replica that holds a session: its audio socket (speech in, events out), its HTTP API, and
its video routes proxied (``forward``)."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Mapping
from typing import Any

import aiohttp
import numpy as np
from starlette.background import BackgroundTask
from starlette.responses import StreamingResponse

from avatarstream.serve.audio_input import RATE
from avatarstream.serve.problems import ServeError

PIPE_FORMAT = f"format=f32le&rate={RATE}&channels=1"  # what the ingress decodes every client's audio to
# what a proxied GET passes on: the client's conditional and range headers in, the replica's description of the body out
ASKED = ("range", "if-range", "if-none-match", "if-modified-since")
TOLD = ("content-type", "content-length", "content-range", "accept-ranges", "cache-control", "content-disposition", "etag", "last-modified", "retry-after")
PIECE = 64 * 1024
STREAM_TIMEOUT = aiohttp.ClientTimeout(total=None, sock_connect=5, sock_read=30)  # an MP4 may take long to send: only a stall is an error


class ReplicaError(ServeError):
    """The replica answered with an error (its status and detail are passed on), or could not be reached (502)."""

    def __init__(self, status: int, detail: str) -> None:
        super().__init__(detail)
        self.status = status


class ReplicaLink:
    """One session on one replica: ``base_url`` is the replica's own server, ``sid`` the session's id there."""

    def __init__(self, http: aiohttp.ClientSession, base_url: str, sid: str, token: str | None, kind: str = "sessions") -> None:
        self.http = http
        self.base_url = base_url
        self.sid = sid
        self.path = f"/{kind}/{sid}"  # a live session's, or a batch job's (kind "jobs")
        self.headers = auth_headers(token)
        self._socket: aiohttp.ClientWebSocketResponse | None = None

    async def connect(self) -> None:
        url = f"{self.base_url}/sessions/{self.sid}/audio?{PIPE_FORMAT}".replace("http://", "ws://", 1)
        self._socket = await self.http.ws_connect(url, headers=self.headers, max_msg_size=0, heartbeat=5.0)

    async def send(self, samples: np.ndarray) -> None:
        """Speech for the replica's queue (waits while the replica's queue is full: the backpressure reaches the client)."""
        assert self._socket is not None, "connect() first"
        await self._socket.send_bytes(np.ascontiguousarray(samples, "<f4").tobytes())

    async def events(self) -> AsyncIterator[dict[str, Any]]:
        """The replica's WebSocket events (frames, interrupted, error, closed) until its socket closes."""
        assert self._socket is not None, "connect() first"
        async for message in self._socket:
            if message.type == aiohttp.WSMsgType.TEXT:
                yield json.loads(message.data)

    @property
    def url(self) -> str:
        """The session's (or job's) own URL on the replica: what the ingress's routes for it are forwarded to."""
        return f"{self.base_url}{self.path}"

    async def request(self, method: str, path: str = "", body: Any = None) -> dict[str, Any]:
        """A call to the session's (or job's) HTTP API on the replica (``path`` after /sessions/ID or /jobs/ID; ``body`` is sent
        as JSON)."""
        return await call(self.http, method, f"{self.url}{path}", self.headers, body)

    async def aclose(self) -> None:
        """A clean close (1000): the replica's session stays open (DELETE, or its end, closes it)."""
        if self._socket is not None:
            with contextlib.suppress(Exception):
                await self._socket.close()


def auth_headers(token: str | None) -> dict[str, str]:
    """The replicas take the fleet's token (the ingress checked the client's before it forwards anything)."""
    return {"Authorization": f"Bearer {token}"} if token else {}


async def call(http: aiohttp.ClientSession, method: str, url: str, headers: Mapping[str, str], body: Any = None) -> dict[str, Any]:
    """A JSON call to a replica's API; its errors are raised with their status and detail, as the replica answered them."""
    try:
        async with http.request(method, url, headers=headers, json=body) as answer:
            found = await answer.json(content_type=None)
    except (aiohttp.ClientError, TimeoutError, json.JSONDecodeError) as err:
        raise ReplicaError(502, f"the session's replica did not answer ({type(err).__name__}); it may be gone, and the session resuming") from err
    if answer.status >= 400:
        raise ReplicaError(answer.status, str(found.get("detail", found) if isinstance(found, dict) else found))
    return dict(found)


async def forward(http: aiohttp.ClientSession, url: str, headers: Mapping[str, str], asked: Mapping[str, str]) -> StreamingResponse:
    """A GET proxied to a replica: its status, headers and body as it answers them (errors too, which are the single server's
    JSON problems), streamed as they arrive. ``asked`` are the client's request headers (only ``ASKED`` go on)."""
    sent = {name: asked[name] for name in ASKED if name in asked} | dict(headers)
    try:
        answer = await http.get(url, headers=sent, timeout=STREAM_TIMEOUT, auto_decompress=False)
    except (aiohttp.ClientError, TimeoutError) as err:
        raise ReplicaError(502, f"the session's replica did not answer ({type(err).__name__}); it may be gone") from err
    told = {name: answer.headers[name] for name in TOLD if name in answer.headers}

    async def body() -> AsyncIterator[bytes]:
        try:
            async for piece in answer.content.iter_chunked(PIECE):
                yield piece
        finally:
            answer.release()

    # released when the body is through, or after the response if it never started (a client that left at once)
    return StreamingResponse(body(), status_code=answer.status, headers=told, background=BackgroundTask(answer.release))
