"""One sink on its own thread behind a bounded queue, so no sink can hold up another.

Lossless sinks (files) make the producer wait when their queue is full; any
other sink loses packets instead, and then skips to the next video keyframe
so that what it does deliver still decodes. A sink that fails is, if it
reconnects, closed and opened again after an exponential backoff, at a
keyframe. Everything lost is counted in the sink's report.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from dataclasses import dataclass

from avatarstream.publish.packets import EncodedPacket, StreamInfo
from avatarstream.publish.sink import Sink, SinkReport

log = logging.getLogger(__name__)

MAX_ERRORS_KEPT = 10  # a sink failing for hours must not grow its report without bound


@dataclass(frozen=True)
class Backoff:
    """Waits between reconnection attempts: first, doubled after each failure, capped."""

    first_s: float = 0.5
    max_s: float = 10.0

    def delay(self, failures: int) -> float:
        return min(self.max_s, self.first_s * 2.0 ** max(failures - 1, 0))


class SinkRunner:
    """Feeds one sink from a worker thread; ``put`` from the publisher, ``finish`` for the report."""

    def __init__(self, sink: Sink, max_queued_packets: int = 512, backoff: Backoff = Backoff()) -> None:
        self.sink = sink
        self._backoff = backoff
        self._queue: queue.Queue[EncodedPacket | None] = queue.Queue(maxsize=max_queued_packets)  # None, queued by finish(): no more packets
        self._dropped_on_put = 0  # touched by the producer thread only
        self._skipping = False  # producer side: a packet was dropped, wait for a keyframe
        self._report = SinkReport(sink.name, lossless=sink.lossless)  # written by the worker thread only
        self._extra_errors = 0
        self._thread: threading.Thread | None = None

    def start(self, info: StreamInfo) -> None:
        self._thread = threading.Thread(target=self._work, args=(info,), name=f"sink:{self.sink.name}", daemon=True)
        self._thread.start()

    def put(self, packet: EncodedPacket) -> None:
        """Hand a packet over; waits only for a lossless sink."""
        if self.sink.lossless:
            self._queue.put(packet)
            return
        if self._skipping and not _is_keyframe(packet):
            self._dropped_on_put += 1
            return
        try:
            self._queue.put_nowait(packet)
            self._skipping = False
        except queue.Full:
            self._dropped_on_put += 1
            self._skipping = True

    def finish(self, timeout_s: float | None) -> SinkReport:
        """Deliver what is queued, close the sink, and report; gives up after ``timeout_s``.

        A sink that is still stuck then (a network write that never returns) is
        left to its daemon thread and reported as not finished.
        """
        report = self._report
        if self._thread is None:
            report.errors.append("never opened: the encoder produced no stream")
            return report
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        try:
            self._queue.put(None, timeout=timeout_s)
            self._thread.join(None if deadline is None else max(0.0, deadline - time.monotonic()))
        except queue.Full:
            pass
        if self._thread.is_alive():
            return SinkReport(
                report.name,
                report.packets_delivered,
                report.packets_dropped + self._dropped_on_put + self._queue.qsize(),
                report.retries,
                [*report.errors, f"did not finish within {timeout_s:g} s; abandoned"],
                report.lossless,
            )
        report.packets_dropped += self._dropped_on_put
        if self._extra_errors:
            report.errors.append(f"... and {self._extra_errors} more errors")
        return report

    def _work(self, info: StreamInfo) -> None:
        sink, report = self.sink, self._report
        failures, retry_at = 0, 0.0
        is_open = self._open(info)
        failed_for_good = not is_open and not sink.reconnect
        if not is_open:
            failures, retry_at = 1, time.monotonic() + self._backoff.delay(1)
        written = 0  # in the current session, in case its close() cannot report
        while (packet := self._queue.get()) is not None:
            if not is_open and not failed_for_good and _is_keyframe(packet) and time.monotonic() >= retry_at:
                report.retries += 1
                is_open, written = self._open(info), 0
                if not is_open:
                    failures += 1
                    retry_at = time.monotonic() + self._backoff.delay(failures)
            if not is_open:
                report.packets_dropped += 1
                continue
            try:
                sink.write(packet)
                written += 1
            except Exception as err:  # noqa: BLE001 - any failure of one sink is confined to it
                self._error(f"write failed: {err}")
                report.packets_dropped += 1
                self._close(written)
                is_open = False
                failed_for_good = not sink.reconnect
                failures += 1
                retry_at = time.monotonic() + self._backoff.delay(failures)
            else:
                failures = 0
        if is_open:
            self._close(written)

    def _open(self, info: StreamInfo) -> bool:
        try:
            self.sink.open(info)
        except Exception as err:  # noqa: BLE001 - reported, retried if the sink reconnects
            self._error(f"open failed: {err}")
            return False
        return True

    def _close(self, written: int) -> None:
        """Close the current session and fold its own report into ours."""
        report = self._report
        try:
            closed = self.sink.close()
        except Exception as err:  # noqa: BLE001
            self._error(f"close failed: {err}")
            report.packets_delivered += written
            return
        report.packets_delivered += closed.packets_delivered
        report.packets_dropped += closed.packets_dropped
        report.retries += closed.retries
        for message in closed.errors:
            self._error(message)

    @property
    def failed(self) -> str | None:
        """For a file output that has failed: its first error (read from another thread: the list only grows)."""
        errors = self._report.errors
        return errors[0] if self.sink.lossless and errors else None

    def _error(self, message: str) -> None:
        # a live sink's failure is news now; a file's is reported once, at the end of the render or by its session
        log.log(logging.DEBUG if self.sink.lossless else logging.WARNING, "%s: %s", self.sink.name, message)
        if len(self._report.errors) < MAX_ERRORS_KEPT:
            self._report.errors.append(message)
        else:
            self._extra_errors += 1


def _is_keyframe(packet: EncodedPacket) -> bool:
    return packet.kind == "video" and packet.keyframe
