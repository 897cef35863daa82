"""The ingress's connection to the replica that holds a session: its audio socket (speech in, events out) and its HTTP API."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import numpy as np

from avatarstream.serve.audio_input import RATE
from avatarstream.serve.problems import ServeError

PIPE_FORMAT = f"format=f32le&rate={RATE}&channels=1"  # what the ingress decodes every client's audio to


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
        self.headers = {"Authorization": f"Bearer {token}"} if token else {}
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

    async def request(self, method: str, path: str = "") -> dict[str, Any]:
        """A call to the session's (or job's) HTTP API on the replica (``path`` after /sessions/ID or /jobs/ID)."""
        try:
            async with self.http.request(method, f"{self.base_url}{self.path}{path}", headers=self.headers) as answer:
                body = await answer.json(content_type=None)
        except (aiohttp.ClientError, TimeoutError, json.JSONDecodeError) as err:
            raise ReplicaError(502, f"the session's replica did not answer ({type(err).__name__}); it may be gone, and the session resuming") from err
        if answer.status >= 400:
            raise ReplicaError(answer.status, str(body.get("detail", body)))
        return dict(body)

    async def aclose(self) -> None:
        """A clean close (1000): the replica's session stays open (DELETE, or its end, closes it)."""
        if self._socket is not None:
            with contextlib.suppress(Exception):
                await self._socket.close()
