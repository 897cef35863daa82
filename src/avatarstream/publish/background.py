"""Run a chunk writer on its own thread so encoding overlaps inference.

A bounded queue between the caller and the worker applies backpressure: when
the encoder falls behind, ``submit`` waits instead of letting frames pile up,
so host memory stays constant over any session length.
"""

from __future__ import annotations

import queue
import threading
from typing import Protocol

from avatarstream.errors import PublishError
from avatarstream.lifecycle import ClosesOnExit
from avatarstream.publish.media import MediaChunk


class ChunkWriter(Protocol):
    """Anything that encodes chunks in order and finalizes its output on close."""

    def write(self, chunk: MediaChunk) -> None: ...

    def close(self) -> None: ...


class BackgroundEncoder(ClosesOnExit):
    """Feeds ``writer.write`` from a worker thread; always closes the writer at the end.

    The worker is the only thread that touches the writer, so a writer needs no
    locking. A worker failure is raised on every later ``submit`` and, if no
    ``submit`` reported it yet, on ``close``; after it the worker keeps draining
    the queue (discarding chunks) so the caller can never block on a full queue.
    """

    def __init__(self, writer: ChunkWriter, max_queued_chunks: int = 4) -> None:
        if max_queued_chunks < 1:
            raise ValueError(f"max_queued_chunks must be at least 1, got {max_queued_chunks}")
        self.frames_written = 0
        self.max_queue_depth_seen = 0
        self._writer = writer
        self._queue: queue.Queue[MediaChunk | None] = queue.Queue(maxsize=max_queued_chunks)  # None, queued by close(): no more chunks
        self._error: BaseException | None = None
        self._error_raised = False
        self._closed = False
        self._thread = threading.Thread(target=self._work, name="avatarstream-encoder", daemon=True)
        self._thread.start()

    def submit(self, chunk: MediaChunk) -> None:
        """Queue a chunk for encoding; waits while the queue is full."""
        if self._closed:
            raise RuntimeError("BackgroundEncoder is closed")
        if self._error is not None:
            raise self._worker_failure()
        self._queue.put(chunk)
        self.max_queue_depth_seen = max(self.max_queue_depth_seen, self._queue.qsize())

    def close(self) -> None:
        """Encode what is queued, finalize the writer, join the worker; safe to call twice."""
        if not self._closed:
            self._closed = True
            self._queue.put(None)
            self._thread.join()
        if self._error is not None and not self._error_raised:
            raise self._worker_failure()

    def _work(self) -> None:
        try:
            while (chunk := self._queue.get()) is not None:
                if self._error is None:
                    self._write(chunk)
        finally:
            try:
                self._writer.close()
            except BaseException as err:  # noqa: BLE001 - handed to the caller's thread
                self._error = self._error or err

    def _write(self, chunk: MediaChunk) -> None:
        try:
            self._writer.write(chunk)
        except BaseException as err:  # noqa: BLE001 - handed to the caller's thread
            self._error = err
        else:
            self.frames_written += chunk.num_frames

    def _worker_failure(self) -> PublishError:
        """The worker's failure as a PublishError for the caller's thread (cause attached)."""
        err = self._error
        self._error_raised = True
        message = str(err) if isinstance(err, PublishError) else f"encoding failed: {err}"
        failure = PublishError(message)
        failure.__cause__ = err
        return failure
