"""A WebRTC viewer made with aiortc: receive-only audio and video, every decoded frame timed as it arrives.

The A/V sync checks (the preview's, the voice agents') show a flash with a tone: a viewer hears the tone when it
sees the flash. They time both here, on one clock, after the jitter buffers, as a player would.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

LOUD = 1000.0  # mean |sample| of s16 audio above which a frame carries the tone (silence decodes to ~0)


def loudness(frame: Any) -> float:
    """Mean absolute sample of a decoded audio frame (s16)."""
    return float(np.abs(frame.to_ndarray().astype(np.float32)).mean())


def brightness(frame: Any) -> float:
    """Mean luma of a decoded video frame."""
    return float(frame.to_ndarray(format="gray").mean())


def contrast(frame: Any) -> float:
    """Spread of the colour values across a decoded video frame (luma alone can stay flat while colours swing)."""
    return float(frame.to_ndarray(format="rgb24").astype(np.float32).std())


@dataclass
class Timeline:
    """(arrival time, measure) of every frame of one track."""

    points: list[tuple[float, float]] = field(default_factory=list)
    sample_rate: int | None = None

    def first(self, is_on: Callable[[float], bool], after: float = 0.0) -> float | None:
        return next((t for t, value in self.points if t >= after and is_on(value)), None)

    def last(self, is_on: Callable[[float], bool], after: float = 0.0) -> float | None:
        return next((t for t, value in reversed(self.points) if t >= after and is_on(value)), None)

    def count(self, start: float, end: float) -> int:
        return sum(1 for t, _ in self.points if start <= t < end)

    def values(self, start: float, end: float) -> list[float]:
        return [value for t, value in self.points if start <= t < end]


class Viewer:
    """A receive-only peer; ``record`` times every frame of both tracks until ``close``."""

    def __init__(self, kinds: Sequence[str] = ("video", "audio"), video_codec: str | None = None) -> None:
        from aiortc import RTCPeerConnection, RTCRtpReceiver

        self.pc = RTCPeerConnection()
        self.tracks: dict[str, Any] = {}
        self.pc.on("track", lambda track: self.tracks.setdefault(track.kind, track))
        for kind in kinds:  # the order of the offer's media sections: some peers expect audio first
            transceiver = self.pc.addTransceiver(kind, direction="recvonly")
            if kind == "video" and video_codec is not None:
                transceiver.setCodecPreferences([c for c in RTCRtpReceiver.getCapabilities("video").codecs if c.mimeType == video_codec])
        self.video = Timeline()
        self.audio = Timeline()
        self._tasks: list[asyncio.Task[None]] = []

    async def offer(self) -> dict[str, str]:
        await self.pc.setLocalDescription(await self.pc.createOffer())
        return {"sdp": self.pc.localDescription.sdp, "type": self.pc.localDescription.type}

    async def answer(self, answer: dict[str, str]) -> None:
        from aiortc import RTCSessionDescription

        await self.pc.setRemoteDescription(RTCSessionDescription(sdp=answer["sdp"], type=answer["type"]))

    def record(self, video_measure: Callable[[Any], float] = brightness) -> None:
        self._tasks = [asyncio.create_task(self._record("video", video_measure, self.video)), asyncio.create_task(self._record("audio", loudness, self.audio))]

    async def _record(self, kind: str, measure: Callable[[Any], float], timeline: Timeline) -> None:
        while kind not in self.tracks:
            await asyncio.sleep(0.01)
        while True:
            frame = await self.tracks[kind].recv()
            timeline.points.append((time.monotonic(), measure(frame)))
            if kind == "audio":
                timeline.sample_rate = frame.sample_rate

    async def wait_for(self, kind: str, is_on: Callable[[float], bool], after: float = 0.0, timeout: float = 30.0) -> float:
        """The arrival time of the first frame of ``kind`` whose measure ``is_on``, once it has arrived."""
        timeline = self.video if kind == "video" else self.audio
        deadline = time.monotonic() + timeout
        while (found := timeline.first(is_on, after)) is None:
            if time.monotonic() > deadline:
                raise AssertionError(f"no {kind} frame as awaited within {timeout} s; last: {timeline.points[-5:]}")
            await asyncio.sleep(0.01)
        return found

    async def wait_for_quiet(self, kind: str, is_on: Callable[[float], bool], after: float, quiet_s: float, timeout: float = 30.0) -> float:
        """The arrival time of the last frame of ``kind`` whose measure ``is_on``, once none has come for ``quiet_s``."""
        timeline = self.video if kind == "video" else self.audio
        deadline = time.monotonic() + timeout
        while True:
            last = timeline.last(is_on, after) or after
            if time.monotonic() - last >= quiet_s:
                return last
            if time.monotonic() > deadline:
                raise AssertionError(f"{kind} did not go quiet within {timeout} s")
            await asyncio.sleep(0.02)

    async def close(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self.pc.close()
