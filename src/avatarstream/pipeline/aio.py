"""Async streaming: drive the (synchronous) chunk loop from an async audio source.

The loop runs on a worker thread so model calls never block the event loop;
audio is pulled from the async iterator on demand and finished chunks come
back through a small bounded queue, so a slow consumer applies backpressure
instead of letting frames pile up.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import AsyncGenerator, AsyncIterable, Callable, Iterable, Iterator
from typing import Any

from avatarstream.publish.media import MediaChunk
from avatarstream.sources.pcm import PcmBlock

#: The synchronous loop over an audio source: ``Pipeline.stream`` with its other arguments bound.
SyncStream = Callable[[Iterator[PcmBlock]], Iterable[MediaChunk]]

_END = object()
_POLL_S = 0.05


class _Bridge:
    """Thread-side view of the event loop: pull audio, push results, stop when told."""

    def __init__(self, loop: asyncio.AbstractEventLoop, audio: AsyncIterable[PcmBlock], max_ahead: int) -> None:
        self.loop = loop
        self.audio = aiter(audio)
        self.out: asyncio.Queue[Any] = asyncio.Queue(maxsize=max_ahead)
        self.stopped = threading.Event()

    async def _next_block(self) -> Any:
        return await anext(self.audio, _END)

    def blocks(self) -> Iterator[PcmBlock]:
        while True:
            block = self._wait(self._next_block())
            if block is _END:
                return
            yield block

    def put(self, item: Any) -> None:
        self._wait(self.out.put(item))

    def _wait(self, coro: Any) -> Any:
        """Run ``coro`` on the event loop; give up (returning _END) once the consumer has stopped."""
        if self.stopped.is_set() or self.loop.is_closed():
            coro.close()
            return _END
        future = asyncio.run_coroutine_threadsafe(coro, self.loop)
        while True:
            try:
                return future.result(timeout=_POLL_S)
            except concurrent.futures.TimeoutError:
                if self.stopped.is_set() or self.loop.is_closed():
                    future.cancel()
                    return _END
            except concurrent.futures.CancelledError:
                return _END

    def stop(self) -> None:
        self.stopped.set()


async def astream(stream: SyncStream, audio: AsyncIterable[PcmBlock], *, max_ahead: int = 2) -> AsyncGenerator[MediaChunk, None]:
    """``stream`` (the synchronous loop) driven from ``audio`` on a thread of its own: same loop, same frames."""
    bridge = _Bridge(asyncio.get_running_loop(), audio, max_ahead)

    def work() -> None:
        try:
            for media in stream(bridge.blocks()):
                if bridge.stopped.is_set():
                    return
                bridge.put(media)
            bridge.put(_END)
        except BaseException as exc:  # noqa: BLE001 -- not swallowed: handed to the consumer, re-raised there
            bridge.put(exc)

    # not a daemon: interpreter shutdown waits for it, and the stop flag ends it within one chunk
    thread = threading.Thread(target=work, name="avatarstream-loop")
    thread.start()
    try:
        while True:
            item = await bridge.out.get()
            if item is _END:
                return
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        bridge.stop()
        while thread.is_alive():  # the worker sees the stop flag within one chunk
            await asyncio.sleep(0.005)
