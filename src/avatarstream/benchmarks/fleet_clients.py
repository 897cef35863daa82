"""Fleet clients as live agents are: a session's audio socket, speech at real-time pace, the events it hears (the fleet's tests
and benchmark)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import numpy as np

RATE = 48000  # the session rate: what the client sends is counted sample for sample on both sides
PIECE = RATE // 10


def speech(seconds: float, pitch: float = 220.0) -> np.ndarray:
    t = np.arange(round(seconds * RATE)) / RATE
    return (0.4 * np.sin(2 * np.pi * pitch * t) * (0.6 + 0.4 * np.sin(2 * np.pi * 3 * t))).astype(np.float32)


@dataclass
class Listener:
    """One audio socket of a session: what it was told, and how it was closed."""

    frames: list[tuple[float, int, int]] = field(default_factory=list)  # (when, first_frame, count)
    close_code: int | None = None
    closed_at: float | None = None
    socket: aiohttp.ClientWebSocketResponse | None = None
    task: asyncio.Task[None] | None = None

    @property
    def last_frame(self) -> int:
        return max((first + count for _, first, count in self.frames), default=0)

    async def send(self, samples: np.ndarray) -> None:
        """Speech at real-time pace, in pieces of 100 ms (stops quietly if the socket closes)."""
        assert self.socket is not None
        start = time.monotonic()
        for i in range(0, samples.size, PIECE):
            if self.socket.closed:
                return
            try:
                await self.socket.send_bytes(samples[i : i + PIECE].astype("<f4").tobytes())
            except (aiohttp.ClientError, ConnectionError):
                return
            await asyncio.sleep(max(0.0, start + (i + PIECE) / RATE - time.monotonic()))


async def listen(http: aiohttp.ClientSession, url: str, sid: str) -> Listener:
    listener = Listener()
    listener.socket = await http.ws_connect(f"{url.replace('http://', 'ws://')}/sessions/{sid}/audio?format=f32le&rate={RATE}&channels=1")

    async def read() -> None:
        assert listener.socket is not None
        async for message in listener.socket:
            if message.type == aiohttp.WSMsgType.TEXT:
                data = json.loads(message.data)
                if data["type"] == "frames":
                    listener.frames.append((time.monotonic(), data["first_frame"], data["count"]))
        listener.close_code, listener.closed_at = listener.socket.close_code, time.monotonic()

    listener.task = asyncio.create_task(read())
    return listener


async def close(listener: Listener) -> None:
    if listener.socket is not None:
        await listener.socket.close()
    if listener.task is not None:
        with contextlib.suppress(asyncio.CancelledError):
            await listener.task


async def create(http: aiohttp.ClientSession, url: str) -> tuple[int, dict[str, Any], dict[str, str]]:
    async with http.post(f"{url}/sessions", data={"identity": "default", "outputs": json.dumps({"hls": True})}) as answer:
        return answer.status, await answer.json(), dict(answer.headers)


async def status(http: aiohttp.ClientSession, url: str, sid: str) -> dict[str, Any]:
    async with http.get(f"{url}/sessions/{sid}") as answer:
        assert answer.status == 200, await answer.text()
        return dict(await answer.json())


async def delete(http: aiohttp.ClientSession, url: str, sid: str) -> dict[str, Any]:
    async with http.delete(f"{url}/sessions/{sid}") as answer:
        assert answer.status == 200, await answer.text()
        return dict(await answer.json())


async def health(http: aiohttp.ClientSession, url: str) -> dict[str, Any]:
    async with http.get(f"{url}/healthz") as answer:
        return dict(await answer.json())


async def wait_for(check: Any, timeout_s: float, what: str, every_s: float = 0.25) -> Any:
    """Poll the async ``check`` until it returns something true."""
    deadline = time.monotonic() + timeout_s
    while True:
        found = await check()
        if found:
            return found
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout_s:.0f} s (last: {found!r})")
        await asyncio.sleep(every_s)
