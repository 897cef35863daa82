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
from collections.abc import AsyncIterable, AsyncIterator, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from avatarstream.pipeline.observer import RunObserver
from avatarstream.publish.media import MediaChunk
from avatarstream.sources.pcm import PcmBlock

if TYPE_CHECKING:
    from avatarstream.pipeline.pipeline import Pipeline

_END = object()


class _Bridge:
    """Thread-side view of the event loop: pull audio, push results, stop when told."""

    def __init__(self, loop: asyncio.AbstractEventLoop, audio: AsyncIterable[PcmBlock], max_ahead: int) -> None:
        self.loop = loop
        self.audio = aiter(audio)
        self.out: asyncio.Queue[Any] = asyncio.Queue(maxsize=max_ahead)
        self.stopped = threading.Event()
        self._pending: concurrent.futures.Future | None = None

    async def _next_block(self) -> Any:
        return await anext(self.audio, _END)

    def blocks(self) -> Iterator[PcmBlock]:
        while not self.stopped.is_set():
            self._pending = asyncio.run_coroutine_threadsafe(self._next_block(), self.loop)
            try:
                block = self._pending.result()
            except concurrent.futures.CancelledError:
                return
            if block is _END:
                return
            yield block

    def put(self, item: Any) -> None:
        if not self.stopped.is_set():
            asyncio.run_coroutine_threadsafe(self.out.put(item), self.loop).result()

    def stop(self) -> None:
        self.stopped.set()
        if self._pending is not None:
            self._pending.cancel()


async def astream(
    pipeline: Pipeline,
    audio: AsyncIterable[PcmBlock],
    reference_image: Any,
    prompt: str = "",
    *,
    seed: int = 0,
    observers: Sequence[RunObserver] = (),
    max_ahead: int = 2,
) -> AsyncIterator[MediaChunk]:
    """Async twin of ``Pipeline.stream``: same loop, same frames."""
    bridge = _Bridge(asyncio.get_running_loop(), audio, max_ahead)

    def work() -> None:
        try:
            for media in pipeline.stream(bridge.blocks(), reference_image, prompt, seed=seed, observers=observers):
                if bridge.stopped.is_set():
                    return
                bridge.put(media)
            bridge.put(_END)
        except BaseException as exc:  # handed to the consumer, re-raised there
            bridge.put(exc)

    thread = threading.Thread(target=work, name="avatarstream-loop", daemon=True)
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
        while thread.is_alive():  # unblock a worker waiting on a full queue
            while not bridge.out.empty():
                bridge.out.get_nowait()
            await asyncio.sleep(0.005)
