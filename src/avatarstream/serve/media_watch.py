"""The clients that take a live session's frames as they are published (the frames WebSocket), each with a bounded queue.

The session hands every published chunk to each watcher with its speech per frame; a watcher that falls behind loses
its oldest chunks rather than holding the session back or growing (it sees the gap in ``first_frame``). When the run
ends every watcher gets ``None``.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from avatarstream.publish.media import MediaChunk

MEDIA_QUEUE = 8  # chunks buffered per watcher: a few seconds of video; a slower client loses the oldest


@dataclass(frozen=True)
class Published:
    chunk: MediaChunk
    speech: list[float]  # per frame: the share of its audio that is speech


class MediaWatchers:
    def __init__(self) -> None:
        self._queues: set[asyncio.Queue[Published | None]] = set()
        self._ended = False

    def watch(self) -> asyncio.Queue[Published | None]:
        """A new watcher's queue; one that comes after the run ended (while its socket was opening) holds the end at once."""
        queue: asyncio.Queue[Published | None] = asyncio.Queue(MEDIA_QUEUE)
        if self._ended:
            queue.put_nowait(None)
        self._queues.add(queue)
        return queue

    def unwatch(self, queue: asyncio.Queue[Published | None]) -> None:
        self._queues.discard(queue)

    def __bool__(self) -> bool:
        return bool(self._queues)

    def publish(self, chunk: MediaChunk, speech: list[float]) -> None:
        self._put(Published(chunk, speech))

    def end(self) -> None:
        self._ended = True
        self._put(None)

    def _put(self, item: Published | None) -> None:
        for queue in self._queues:
            if queue.full():
                queue.get_nowait()
            queue.put_nowait(item)
