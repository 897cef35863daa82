"""The soak's clients: each keeps one session slot busy the way real callers do, and records what its sessions delivered.

The anchor holds one session for the whole soak (it also publishes to the
misbehaving RTMP peer); every other client loops through three ways of using
and leaving a session: speak and close cleanly; speak, interrupt and vanish
(TCP dropped, no close frame); speak and walk away (the idle timeout ends it).
After each session ends, its MP4 is downloaded and its frames counted: a
healthy sink must hold every frame the session published.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import av
import numpy as np
import websockets

RATE = 16000
PIECE_S = 0.1  # a microphone's packet
BEHAVIOURS = ("clean", "interrupt-and-vanish", "walk-away")
ENDED = ("closed", "done", "failed")


@dataclass
class SessionRecord:
    """One session as a client saw it; times are seconds since the soak started."""

    behaviour: str
    created_at: float
    ttff_s: float | None = None
    ended_at: float | None = None
    state: str | None = None
    frames: int = 0  # what the session says it published
    file_frames: int | None = None  # what its MP4 holds
    underruns: int = 0
    frame_events: int = 0
    error: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class SoakClients:
    url: str
    token: str
    speech: np.ndarray  # mono float32 at RATE, looped as needed
    scratch: Path  # where downloaded MP4s land while they are counted
    idle_timeout_s: float
    started: float = field(default_factory=time.monotonic)
    records: list[SessionRecord] = field(default_factory=list)
    refused: int = 0  # 503s met while every slot was busy
    failures: list[str] = field(default_factory=list)  # what stopped a client outside any one session (the soak fails on any)
    _offset: int = 0

    def now(self) -> float:
        return time.monotonic() - self.started

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}

    async def anchor(self, http: aiohttp.ClientSession, until: float, rtmp: str) -> None:
        """One session for the whole soak: speak 4 s, listen 4 s, again; then close it cleanly."""
        async with self.reported("anchor"):
            await self._anchor(http, until, rtmp)

    async def churn(self, http: aiohttp.ClientSession, until: float, first: int) -> None:
        """Open, use and leave sessions until ``until``, rotating through BEHAVIOURS from ``first``."""
        async with self.reported(f"churn {first}"):
            await self._churn(http, until, first)

    @contextlib.asynccontextmanager
    async def reported(self, client: str) -> AsyncIterator[None]:
        """A client that stops on an error (an unexpected answer, a timeout) is recorded, so the soak still reports everything it saw."""
        try:
            yield
        except Exception as err:  # noqa: BLE001 - any failure is the soak's finding, not a crash of the harness
            self.failures.append(f"{client} at {self.now():.1f} s: {type(err).__name__}: {err}")

    async def _anchor(self, http: aiohttp.ClientSession, until: float, rtmp: str) -> None:
        record, sid = await self._open(http, "anchor", {"hls": True, "file": True, "rtmp": rtmp})
        async with self._socket(sid, record) as ws:
            while self.now() < until:
                await self._speak(ws, 4.0)
                await asyncio.sleep(4.0)
            await ws.close()
        await http.delete(f"{self.url}/sessions/{sid}")
        await self._settle(http, sid, record)

    async def _churn(self, http: aiohttp.ClientSession, until: float, first: int) -> None:
        turn = first
        while self.now() < until:
            behaviour = BEHAVIOURS[turn % len(BEHAVIOURS)]
            turn += 1
            record, sid = await self._open(http, behaviour, {"hls": True, "file": True})
            try:
                await self._use(http, behaviour, sid, record)
            except (OSError, websockets.WebSocketException, aiohttp.ClientError) as err:
                record.error = f"client: {err}"
            await self._settle(http, sid, record)

    async def _use(self, http: aiohttp.ClientSession, behaviour: str, sid: str, record: SessionRecord) -> None:
        async with self._socket(sid, record) as ws:
            if behaviour == "clean":
                await self._speak(ws, 3.0)
                await asyncio.sleep(2.0)
                await ws.close()
                await http.delete(f"{self.url}/sessions/{sid}")
            elif behaviour == "interrupt-and-vanish":
                speaking = asyncio.create_task(self._speak(ws, 6.0))
                await asyncio.sleep(2.0)
                await ws.send(json.dumps({"type": "interrupt"}))
                await speaking
                await asyncio.sleep(2.0)
                ws.transport.abort()  # a crashed client: no close frame; the server ends the session at once
            else:
                await self._speak(ws, 2.0)
                await ws.close()  # a clean close leaves the session open: the idle timeout ends it

    async def _open(self, http: aiohttp.ClientSession, behaviour: str, outputs: dict[str, Any]) -> tuple[SessionRecord, str]:
        """Create a session, waiting out 503s as their Retry-After says."""
        form = {"identity": "default", "outputs": json.dumps(outputs)}
        while True:
            start = self.now()
            async with http.post(f"{self.url}/sessions", data=form) as answer:
                if answer.status == 503:
                    self.refused += 1
                    await asyncio.sleep(float(answer.headers.get("Retry-After", "1")))
                    continue
                body = await answer.json()
                if answer.status != 201:
                    raise RuntimeError(f"session creation answered {answer.status}: {body}")
            record = SessionRecord(behaviour, created_at=round(start, 3))
            self.records.append(record)
            return record, str(body["id"])

    @contextlib.asynccontextmanager
    async def _socket(self, sid: str, record: SessionRecord) -> AsyncIterator[Any]:
        url = self.url.replace("http://", "ws://") + f"/sessions/{sid}/audio?format=s16le&rate={RATE}&channels=1"
        async with websockets.connect(url, additional_headers=self.headers) as ws:
            reader = asyncio.create_task(self._read(ws, record))
            try:
                yield ws
            finally:
                reader.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await reader

    async def _read(self, ws: Any, record: SessionRecord) -> None:
        with contextlib.suppress(websockets.ConnectionClosed):
            async for message in ws:
                if json.loads(message)["type"] == "frames":
                    record.frame_events += 1

    async def _speak(self, ws: Any, seconds: float) -> None:
        """Send ``seconds`` of speech in real-time pieces at real-time pace."""
        step = round(PIECE_S * RATE)
        start = time.monotonic()
        for i in range(round(seconds / PIECE_S)):
            piece = np.take(self.speech, np.arange(self._offset, self._offset + step), mode="wrap")
            self._offset = (self._offset + step) % self.speech.size
            await ws.send((np.clip(piece, -1, 1) * 32767).astype("<i2").tobytes())
            await asyncio.sleep(max(0.0, start + (i + 1) * PIECE_S - time.monotonic()))

    async def _settle(self, http: aiohttp.ClientSession, sid: str, record: SessionRecord) -> None:
        """Wait for the session to end, then record its figures and count the frames of its MP4."""
        deadline = time.monotonic() + self.idle_timeout_s + 60
        # any request counts as activity: polling a walked-away session faster than its idle timeout would keep it open
        period = self.idle_timeout_s + 1.0 if record.behaviour == "walk-away" else 0.5
        while True:
            async with http.get(f"{self.url}/sessions/{sid}") as answer:
                info = await answer.json()
                if answer.status != 200:
                    record.ended_at, record.error = round(self.now(), 3), f"its status answered {answer.status}: {info}"
                    return
            if info["state"] in ENDED or time.monotonic() > deadline:
                break
            await asyncio.sleep(period)
        record.ended_at, record.state = round(self.now(), 3), info["state"]
        stats = info["stats"]
        record.frames, record.underruns, record.ttff_s = stats["frames"], stats["underruns"], stats["ttff_s"]
        if info["state"] not in ENDED:
            record.error = (record.error or "") + f" still {info['state']} long after it was left"
            return
        video = self.scratch / f"soak-{sid[:8]}.mp4"
        async with http.get(f"{self.url}/sessions/{sid}/video.mp4") as answer:
            if answer.status != 200:
                record.error = (record.error or "") + f" video.mp4 answered {answer.status}"
                return
            video.write_bytes(await answer.read())
        try:
            record.file_frames = count_video_frames(video)
        finally:
            video.unlink(missing_ok=True)


def count_video_frames(path: Path) -> int:
    """Video packets in an MP4 (one per frame for H.264 without B-frame reordering gaps)."""
    with av.open(str(path)) as container:
        return sum(1 for packet in container.demux(video=0) if packet.size)
