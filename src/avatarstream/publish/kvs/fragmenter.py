"""Encoded packets -> Kinesis Video fragments: one cluster per GOP, each starting on its keyframe.

PutMedia makes every cluster a fragment and rejects a fragment whose earliest
frame is not after the latest frame of the previous one (ErrorId 4004), so
audio is placed by time, not by arrival: an audio frame goes into the GOP it
plays in, however far audio runs ahead of or behind video in the packet
order. Audio that runs ahead waits until video shows where it belongs. A
fragment is complete once audio has reached the next keyframe (or video is two
keyframes ahead of audio, or the stream ends).
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NamedTuple

from avatarstream.publish.kvs.mkv import AUDIO_TRACK, VIDEO_TRACK, Block, cluster
from avatarstream.publish.packets import EncodedPacket

MAX_WAITING_AUDIO = 256  # audio ahead of video that can wait for it (~5 s of AAC); beyond, the oldest is lost
_OFFSET_RANGE = range(-(2**15), 2**15)  # a SimpleBlock's timecode relative to its cluster


@dataclass(frozen=True)
class Fragment:
    """One MKV cluster ready to send; ``timecode_ms`` is the cluster's absolute timecode."""

    timecode_ms: int
    data: bytes
    packets: int


class _Frame(NamedTuple):
    track: int
    ms: int
    keyframe: bool
    data: bytes


@dataclass
class _Collecting:
    start_ms: int
    frames: list[_Frame] = field(default_factory=list)


def wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


class Fragmenter:
    """Packets in decode order in, finished fragments out, with absolute (producer) timecodes.

    The first packet is stamped with the wall clock and the rest follow by
    their pts, so a stream opened mid-way (a reconnected sink) is stamped
    "now", not "now + its position".
    """

    def __init__(self, clock_ms: Callable[[], int] = wall_clock_ms) -> None:
        self._clock_ms = clock_ms
        self._origin_ms: int | None = None
        self._open: list[_Collecting] = []  # GOPs not yet complete, oldest first
        self._waiting: deque[_Frame] = deque()  # audio later than any video seen so far
        self._video_ms: int | None = None
        self._audio_ms: int | None = None
        self._emitted = False
        self.dropped = 0  # packets that cannot be sent: video before the first keyframe, misplaced audio

    def add(self, packet: EncodedPacket) -> list[Fragment]:
        pts_ms = math.floor(packet.pts * packet.time_base * 1000)
        if self._origin_ms is None:
            self._origin_ms = self._clock_ms() - pts_ms
        ms = self._origin_ms + pts_ms
        if packet.kind == "video":
            self._add_video(_Frame(VIDEO_TRACK, ms, packet.keyframe, packet.data))
        else:
            self._add_audio(_Frame(AUDIO_TRACK, ms, True, packet.data))
        return self._complete()

    def flush(self) -> list[Fragment]:
        """Everything still held, at the end of the stream."""
        while self._waiting:
            self._place(self._waiting.popleft())
        done = [self._finish(c) for c in self._open]
        self._open = []
        return done

    def _add_video(self, frame: _Frame) -> None:
        if frame.keyframe:
            self._open.append(_Collecting(frame.ms))
        if not self._open:
            self.dropped += 1  # undecodable without the keyframe before it
            return
        self._open[-1].frames.append(frame)
        self._video_ms = frame.ms
        while self._waiting and self._waiting[0].ms <= frame.ms:
            self._place(self._waiting.popleft())

    def _add_audio(self, frame: _Frame) -> None:
        self._audio_ms = frame.ms
        if self._video_ms is not None and frame.ms <= self._video_ms:
            self._place(frame)
            return
        self._waiting.append(frame)
        if len(self._waiting) > MAX_WAITING_AUDIO:
            self._waiting.popleft()
            self.dropped += 1

    def _place(self, frame: _Frame) -> None:
        """Put audio into the open GOP it plays in; before the first keyframe only into the first fragment."""
        target = next((c for c in reversed(self._open) if c.start_ms <= frame.ms), None)
        if target is None and self._open and not self._emitted:
            target = self._open[0]  # e.g. AAC priming before the first video frame
        if target is None:
            self.dropped += 1  # plays in a fragment already sent
        else:
            target.frames.append(frame)

    def _complete(self) -> list[Fragment]:
        done = []
        while len(self._open) >= 2 and (len(self._open) >= 3 or (self._audio_ms is not None and self._audio_ms >= self._open[1].start_ms)):
            done.append(self._finish(self._open.pop(0)))
        return done

    def _finish(self, collecting: _Collecting) -> Fragment:
        start = collecting.start_ms
        frames = [f for f in collecting.frames if f.ms - start in _OFFSET_RANGE]
        blocks = [Block(f.track, f.ms - start, f.keyframe, f.data) for f in frames]
        self.dropped += len(collecting.frames) - len(blocks)
        self._emitted = True
        return Fragment(start, cluster(start, blocks), len(blocks))
