"""One PutMedia request: MKV goes up a chunked body while acknowledgements come down.

PutMedia is full duplex over HTTP/1.1: the service answers 200 as soon as the
headers check out and then streams acknowledgements while the body is still
being sent. aiohttp writes the request body from its own task while the
response is read, which is what this needs (clients that send the whole body
first, such as httpx, cannot do it).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass

import aiohttp

from avatarstream.publish.kvs.acks import parse_ack

log = logging.getLogger(__name__)

_MAX_ERROR_BODY = 4096
_MAX_ACK_LINE = 65536
# Throttling, and a data endpoint that is not (or no longer) the stream's: the uploader asks GetDataEndpoint again.
_RETRIABLE_TYPES = {"ClientLimitExceededException", "ConnectionLimitExceededException", "InvalidEndpointException"}


class Rejected(Exception):
    """The service answered the request with an HTTP error instead of 200."""

    def __init__(self, status: int, error_type: str, body: str) -> None:
        self.status, self.error_type, self.body = status, error_type, body
        super().__init__(f"HTTP {status} {error_type} {body}".strip())

    @property
    def retriable(self) -> bool:
        """Throttling, a stale endpoint and server errors pass; a bad request, signature or stream name does not."""
        return self.status >= 500 or self.status == 429 or self.error_type in _RETRIABLE_TYPES


@dataclass(frozen=True)
class Ended:
    """The response is over: cleanly (``error`` None) or not."""

    connection: PutMediaConnection
    error: BaseException | None


class PutMediaConnection:
    """Starts the request at once; acknowledgements and the final ``Ended`` go to ``events``."""

    def __init__(
        self,
        http: aiohttp.ClientSession,
        url: str,
        headers: dict[str, str],
        events: asyncio.Queue[object],
        connect_timeout_s: float,
        ack_timeout_s: float,
    ) -> None:
        self.url = url
        self._body: asyncio.Queue[bytes | None] = asyncio.Queue()
        self._events = events
        timeout = aiohttp.ClientTimeout(total=None, sock_connect=connect_timeout_s, sock_read=ack_timeout_s)
        self._task = asyncio.get_running_loop().create_task(self._run(http, headers, timeout))

    def send(self, data: bytes) -> None:
        """Queue bytes for the body; they go out as the connection takes them."""
        self._body.put_nowait(data)

    def finish(self) -> None:
        """End the body (the terminating chunk); the service then sends the remaining acknowledgements."""
        self._body.put_nowait(None)

    async def abort(self) -> None:
        """Close the connection now, whatever state it is in."""
        self._task.cancel()
        await asyncio.gather(self._task, return_exceptions=True)

    async def _chunks(self) -> AsyncIterator[bytes]:
        while (data := await self._body.get()) is not None:
            yield data

    async def _run(self, http: aiohttp.ClientSession, headers: dict[str, str], timeout: aiohttp.ClientTimeout) -> None:
        error: BaseException | None = None
        try:
            async with http.post(self.url, data=self._chunks(), headers=headers, timeout=timeout) as response:
                if response.status != 200:
                    body = await response.content.read(_MAX_ERROR_BODY)
                    error_type = response.headers.get("x-amz-ErrorType", "").split(":", 1)[0]  # "Type:" as the reference has it
                    raise Rejected(response.status, error_type, body.decode("utf-8", "replace").strip())
                pending = b""
                # readany, not readline: aiohttp fails every later read once the body write fails,
                # so take all that has arrived in one go; acknowledgements must not be left behind.
                while chunk := await response.content.readany():
                    *lines, pending = (pending + chunk).split(b"\n")
                    if len(pending) > _MAX_ACK_LINE:
                        raise ValueError(f"acknowledgement line longer than {_MAX_ACK_LINE} bytes")
                    for line in lines:
                        self._deliver(line)
        except Exception as err:  # noqa: BLE001 - however the request ends, the uploader must hear of it
            error = err
        self._events.put_nowait(Ended(self, error))

    def _deliver(self, line: bytes) -> None:
        try:
            ack = parse_ack(line)
        except (ValueError, TypeError) as err:
            log.warning("kvs: ignoring a malformed acknowledgement from %s: %s", self.url, err)
            return
        if ack is not None:
            self._events.put_nowait(ack)
