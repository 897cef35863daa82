"""KvsSink: encoded packets to an Amazon Kinesis video stream (PutMedia), never holding up the caller.

``write`` only puts the packet on a bounded queue. A worker thread runs an
asyncio loop that cuts packets into fragments (one MKV cluster per GOP) and
uploads them (see uploader.py), buffering a bounded number of fragments while
the network is down. If the queue is ever full, packets are dropped up to the
next keyframe, so what is delivered still decodes; every loss is counted in
the report.
"""

from __future__ import annotations

import asyncio
import queue
import threading

import botocore.session

from avatarstream.errors import PublishError
from avatarstream.publish.kvs.aws import PutMediaTarget
from avatarstream.publish.kvs.fragmenter import Fragmenter, wall_clock_ms
from avatarstream.publish.kvs.mkv import stream_header
from avatarstream.publish.kvs.settings import KvsSettings
from avatarstream.publish.kvs.tally import Tally
from avatarstream.publish.kvs.uploader import Uploader
from avatarstream.publish.packets import EncodedPacket, StreamInfo
from avatarstream.publish.runner import Backoff
from avatarstream.publish.sink import Sink, SinkReport

_JOIN_MARGIN_S = 2.0  # beyond close_timeout_s, for the worker to wind down
DEFAULT_BACKOFF = Backoff(first_s=0.25, max_s=8.0)  # PutMedia allows 5 connections a second per stream


class KvsSink(Sink):
    """Publishes to one Kinesis video stream; ``aws_session`` defaults to the standard AWS chain.

    A network sink: it may lose packets (counted) rather than stall the
    publisher, and it reconnects on its own. ``write`` raises PublishError only
    when the service refuses the stream outright (credentials, unknown stream),
    which no reconnection inside this session can fix.
    """

    lossless = False
    reconnect = True

    def __init__(
        self,
        settings: KvsSettings,
        aws_session: botocore.session.Session | None = None,
        backoff: Backoff = DEFAULT_BACKOFF,
    ) -> None:
        self.settings = settings
        self.name = f"kvs:{settings.stream}"
        self._aws_session = aws_session
        self._backoff = backoff
        self._session: _Session | None = None

    def open(self, info: StreamInfo) -> None:
        """Check region and credentials (InputError if missing) and start the worker; no network wait here."""
        if self._session is not None:
            raise RuntimeError(f"{self.name} is already open")
        target = PutMediaTarget(self.settings, self._aws_session or botocore.session.get_session())
        self._session = _Session(self.settings, target, stream_header(info), self._backoff)

    def write(self, packet: EncodedPacket) -> None:
        """Queue a packet; returns at once (drops, counted, if the queue is full)."""
        if self._session is None:
            raise RuntimeError(f"{self.name} is not open")
        self._session.put(packet)

    def close(self) -> SinkReport:
        """Deliver what is buffered for at most ``close_timeout_s`` and report this session."""
        if self._session is None:
            return SinkReport(self.name)
        session, self._session = self._session, None
        return session.finish(self.name)


class _Session:
    """One open..close: the queue, the worker thread and its event loop."""

    def __init__(self, settings: KvsSettings, target: PutMediaTarget, header: bytes, backoff: Backoff) -> None:
        self._settings = settings
        self._inbox: queue.Queue[EncodedPacket | None] = queue.Queue(maxsize=settings.max_queued_packets)  # None, queued by finish(): no more packets
        self._skipping = False  # caller side: a packet was dropped, wait for the next keyframe
        self._dropped_on_put = 0  # caller side only
        self._fatal_raised = False
        self.tally = Tally()  # worker side only, until the worker has ended
        self._fragmenter = Fragmenter()
        self._uploader = Uploader(settings, target, header, wall_clock_ms(), self.tally, backoff)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._work, name="avatarstream-kvs", daemon=True)
        self._thread.start()

    def put(self, packet: EncodedPacket) -> None:
        fatal = self._uploader.fatal
        if fatal is not None and not self._fatal_raised:
            self._fatal_raised = True
            raise PublishError(fatal)
        if self._skipping and not (packet.kind == "video" and packet.keyframe):
            self._dropped_on_put += 1
            return
        try:
            self._inbox.put_nowait(packet)
        except queue.Full:
            self._dropped_on_put += 1
            self._skipping = True
            return
        self._skipping = False
        self._loop.call_soon_threadsafe(self._drain)

    def finish(self, name: str) -> SinkReport:
        timeout_s = self._settings.close_timeout_s
        try:
            self._inbox.put(None, timeout=timeout_s)
            self._loop.call_soon_threadsafe(self._drain)
        except (queue.Full, RuntimeError):
            pass  # the worker is stuck or gone; the join below gives up on it
        self._thread.join(timeout_s + _JOIN_MARGIN_S)
        left = sum(item is not None for item in list(self._inbox.queue))
        report = self.tally.report(name, self._dropped_on_put + left)
        if self._thread.is_alive():
            report.errors.append(f"the upload did not finish within {timeout_s:g} s; abandoned")
        if self._fatal_raised and self._uploader.fatal in report.errors:
            report.errors.remove(self._uploader.fatal)  # already raised from write(); report it once
        return report

    def _work(self) -> None:
        asyncio.set_event_loop(self._loop)
        try:
            self._loop.run_until_complete(self._uploader.run())
        except Exception as err:  # noqa: BLE001 - a bug here must end up in the report, not kill the publisher
            self.tally.error(f"the upload stopped on an internal error: {err!r}")
        finally:
            self._loop.close()

    def _drain(self) -> None:
        """On the loop: cut queued packets into fragments and hand them to the uploader."""
        while True:
            try:
                item = self._inbox.get_nowait()
            except queue.Empty:
                return
            if item is None:
                for fragment in self._fragmenter.flush():
                    self._uploader.add(fragment)
                self.tally.dropped += self._fragmenter.dropped
                self._uploader.close(self._settings.close_timeout_s)
                return
            for fragment in self._fragmenter.add(item):
                self._uploader.add(fragment)
