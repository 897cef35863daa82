"""Deliver buffered fragments over successive PutMedia connections, one at a time.

Each connection starts with the MKV header and then sends, in order, every
fragment not yet acknowledged. It ends when the service sends an ERROR (the
service then closes the connection, as the producer SDK assumes), when the
connection breaks, when fragments have waited ``ack_timeout_s`` with not a
word from the service (a stalled or never-answered request: nothing else
bounds it, since the HTTP client's read timeout only starts once the body is
complete), when it has been open for ``max_connection_s`` (rotated before the
service cuts it), or when the sink closes. The acknowledgements
still due are read before the next connection starts, so that it resends
exactly the fragments the service has not acknowledged: none lost, none that
it acknowledged sent twice. Failures back off exponentially; a rejection that
no retry can fix (bad signature, unknown stream) ends the upload for good.
"""

from __future__ import annotations

import asyncio

import aiohttp

from avatarstream.errors import PublishError
from avatarstream.publish.kvs.acks import Ack
from avatarstream.publish.kvs.aws import EndpointUnavailable, PutMediaTarget
from avatarstream.publish.kvs.buffer import FragmentBuffer
from avatarstream.publish.kvs.connection import Ended, PutMediaConnection, Rejected
from avatarstream.publish.kvs.fragmenter import Fragment
from avatarstream.publish.kvs.settings import KvsSettings
from avatarstream.publish.kvs.tally import Tally
from avatarstream.publish.runner import Backoff

_WAKE = object()  # a fragment was added or the sink is closing


class Uploader:
    """Runs on the sink's event loop; ``add`` and ``close`` are called from that loop too."""

    def __init__(
        self,
        settings: KvsSettings,
        target: PutMediaTarget,
        header: bytes,
        started_ms: int,
        tally: Tally,
        backoff: Backoff,
    ) -> None:
        self._settings = settings
        self._target = target
        self._header = header
        self._started_ms = started_ms  # x-amzn-producer-start-timestamp (informational with ABSOLUTE timecodes)
        self._tally = tally
        self._backoff = backoff
        self._buffer = FragmentBuffer(settings.max_buffered_fragments)
        self._events: asyncio.Queue[object] = asyncio.Queue()
        self._close_by: float | None = None
        self._failures = 0  # consecutive failed connections
        self.fatal: str | None = None  # set once the stream cannot be written at all

    def add(self, fragment: Fragment) -> None:
        if self.fatal is not None:
            self._tally.dropped += fragment.packets
            return
        lost = self._buffer.add(fragment)
        if lost is not None:
            self._tally.dropped += lost.packets
        self._events.put_nowait(_WAKE)

    def close(self, timeout_s: float) -> None:
        """No more fragments: deliver what is buffered for at most ``timeout_s``."""
        self._close_by = self._now() + timeout_s
        self._events.put_nowait(_WAKE)

    async def run(self) -> None:
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(force_close=True)) as http:
            while await self._work_to_do():
                try:
                    clean = await self._connection(http)
                except PublishError as err:
                    self._give_up(str(err))  # from now on fragments are dropped as they come, until close
                    continue
                if not clean:
                    self._failures += 1
                    self._tally.retries += 1
                    self._target.forget_endpoint()
                    await self._pause(self._backoff.delay(self._failures))
        if self._buffer and self._tally.last_failure is None:
            timeout = self._settings.close_timeout_s
            self._tally.failure(f"{len(self._buffer)} fragments still unacknowledged when closing ran out ({timeout:g} s)")
        self._tally.dropped += sum(f.packets for f in self._buffer.clear())

    async def _work_to_do(self) -> bool:
        """Wait until there is something to send; False once closing and done (or out of time)."""
        while not self._out_of_time():
            if self._buffer.has_unsent:
                return True
            if self._close_by is not None and not self._buffer:
                return False
            self._handle(await self._next_event(self._close_by))
        return False

    async def _connection(self, http: aiohttp.ClientSession) -> bool:
        """One PutMedia request from start to end; True if it ended without a failure."""
        try:
            url = await asyncio.to_thread(self._target.put_media_url)
            headers = await asyncio.to_thread(self._target.signed_headers, url, self._started_ms)
        except EndpointUnavailable as err:
            self._tally.failure(str(err))
            return False
        settings = self._settings
        conn = PutMediaConnection(http, url, headers, self._events, settings.connect_timeout_s, settings.ack_timeout_s)
        conn.send(self._header)
        rotate_at = self._now() + settings.max_connection_s
        finish_by: float | None = None  # once the body is ended: the last moment to wait for acknowledgements
        heard_at = self._now()  # the service's last word, or when fragments started to wait for one
        failure: str | None = None
        try:
            while True:
                if not self._buffer.in_flight:
                    heard_at = self._now()  # nothing awaits an acknowledgement: silence is no sign of a stall
                if finish_by is None:
                    while (fragment := self._buffer.take_unsent()) is not None:
                        conn.send(fragment.data)
                    if self._now() >= rotate_at or self._close_by is not None:
                        conn.finish()
                        finish_by = self._now() + settings.ack_timeout_s
                ack_by = heard_at + settings.ack_timeout_s if self._buffer.in_flight else None
                event = await self._next_event(_earliest(rotate_at if finish_by is None else finish_by, self._close_by, ack_by))
                if isinstance(event, Ack):
                    heard_at = self._now()
                if event is None:
                    if self._out_of_time():
                        return True
                    if ack_by is not None and self._now() >= ack_by:
                        unacknowledged = self._buffer.in_flight
                        self._tally.failure(f"no word from {url} for {settings.ack_timeout_s:g} s with {unacknowledged} fragments unacknowledged: stalled")
                        return False
                    if finish_by is not None and self._now() >= finish_by:
                        if not self._buffer.in_flight:
                            return failure is None  # all acknowledged; the service just did not close
                        self._tally.failure(f"no acknowledgement from {url} within {settings.ack_timeout_s:g} s")
                        return False
                elif isinstance(event, Ended):
                    if event.connection is conn:
                        return self._ended(event, failure)
                elif isinstance(event, Ack) and event.event == "ERROR":
                    failure = self._error_ack(event)
                    if finish_by is None:  # the service closes after an ERROR; stop sending, read what is left
                        conn.finish()
                        finish_by = self._now() + settings.ack_timeout_s
                else:
                    self._handle(event)
        finally:
            await conn.abort()
            while not self._events.empty():  # acknowledgements that came in before it ended still count
                self._handle(self._events.get_nowait())
            self._buffer.rewind()  # the next connection resends whatever is still unacknowledged

    def _ended(self, event: Ended, failure: str | None) -> bool:
        error, url = event.error, event.connection.url
        if isinstance(error, Rejected) and not error.retriable:
            raise PublishError(self._rejection_message(error, url))
        if failure is not None:
            self._tally.failure(failure)
            return False
        unacknowledged = self._buffer.in_flight
        if isinstance(error, Rejected) or unacknowledged:
            cause = "closed by the service" if error is None else str(error) or type(error).__name__
            self._tally.failure(f"PutMedia to {url} failed with {unacknowledged} fragments unacknowledged: {cause}")
            return False
        return True  # nothing outstanding: the service closed an idle connection, or we ended it

    def _handle(self, event: object) -> None:
        """Acknowledgements that settle a fragment; anything else needs no action here."""
        if isinstance(event, Ack) and event.event == self._settings.delivered_on and event.timecode is not None:
            fragment = self._buffer.acknowledge(event.timecode)
            if fragment is not None:
                self._tally.delivered += fragment.packets
                self._failures = 0

    def _error_ack(self, ack: Ack) -> str:
        attempts = self._settings.max_fragment_attempts
        result = self._buffer.fail(ack.timecode, attempts)
        if result is not None and result[1]:
            fragment = result[0]
            self._tally.dropped += fragment.packets
            self._tally.error(f"fragment at {fragment.timecode_ms} ms given up after {attempts} ERROR acknowledgements ({ack.error_text()})")
        return f"ERROR acknowledgement for the fragment at {ack.timecode} ms ({ack.error_text()})"

    def _rejection_message(self, error: Rejected, url: str) -> str:
        if error.status in (401, 403):
            hint = "check the AWS credentials, this machine's clock, and that they allow kinesisvideo:PutMedia"
        elif error.status == 404:
            hint = f"create the stream, or fix its name/ARN or the region ({self._target.region})"
        else:
            hint = "check the stream settings"
        stream = self._settings.stream
        return f"Kinesis Video Streams refused PutMedia for stream {stream!r} at {url}: {error}; {hint}"

    def _give_up(self, message: str) -> None:
        self.fatal = message
        self._tally.error(message)
        self._tally.dropped += sum(f.packets for f in self._buffer.clear())

    async def _pause(self, seconds: float) -> None:
        """Back off, still taking acknowledgements and hand-overs; cut short when closing runs out of time."""
        end = self._now() + seconds
        while (event := await self._next_event(_earliest(end, self._close_by))) is not None:
            self._handle(event)

    async def _next_event(self, deadline: float | None) -> object | None:
        """The next event, or None at ``deadline``."""
        timeout = None if deadline is None else max(0.0, deadline - self._now())
        try:
            return await asyncio.wait_for(self._events.get(), timeout)
        except asyncio.TimeoutError:
            return None

    def _out_of_time(self) -> bool:
        return self._close_by is not None and self._now() >= self._close_by

    @staticmethod
    def _now() -> float:
        return asyncio.get_running_loop().time()


def _earliest(first: float, *others: float | None) -> float:
    return min([first, *(t for t in others if t is not None)])
