"""A local PutMedia service: a real HTTP server on 127.0.0.1 that behaves like Kinesis Video Streams.

It checks the request headers and the SigV4 signature (recomputed with
botocore from the test credentials), parses the MKV body as it arrives,
enforces the fragment rules of the PutMedia reference (clusters start with a
keyframe, every header track present, timecodes increasing across fragments),
answers with BUFFERING / RECEIVED / PERSISTED / IDLE / ERROR acknowledgements,
and keeps the fragments it persisted so a test can rebuild the stream.
Faults can be injected: an ERROR for the n-th fragment (after which the
service ends the response, as the producer SDK expects it to), a connection
that stalls halfway through the n-th fragment and then dies, one that is
reset (TCP RST) there, one where the service stops reading and acknowledging
there and keeps the connection open, requests refused with the HTTP errors
PutMedia documents (throttling: 400 ClientLimitExceededException /
ConnectionLimitExceededException) or accepted and never answered, and
silence (IDLE acknowledgements, then the end of the request).
"""

from __future__ import annotations

import asyncio
import json
import socket
import struct
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

from aiohttp import ClientError, web
from aiohttp.http_exceptions import HttpProcessingError
from botocore.credentials import Credentials
from kvs_ebml_reader import (
    CLUSTER,
    DOC_TYPE,
    EBML,
    INFO,
    SEGMENT,
    TIMECODE,
    TIMECODE_SCALE,
    TRACKS,
    Frame,
    Head,
    children,
    cluster_frames,
    read_head,
    tracks,
    uint,
)
from kvs_sigv4_check import PUT_MEDIA_SIGNED, signature_problem
from typing_extensions import Self

REGION = "us-west-2"
CREDENTIALS = Credentials("AKIAFAKEKVSTEST", "fake/secret/key/for/tests")
STREAM = "avatar-test"
EXPECTED_TRACKS = {1: "V_MPEG4/ISO/AVC", 2: "A_AAC"}
CLIENT_LEAVE_S = 5.0
THROTTLE_MESSAGES = {  # PutMedia's throttling errors (both HTTP 400), as its API reference words them
    "ClientLimitExceededException": "Kinesis Video Streams has throttled the request because you have exceeded the limit of allowed client calls.",
    "ConnectionLimitExceededException": "Kinesis Video Streams has throttled the request because you have exceeded the limit of allowed client connections.",
}


@dataclass
class Faults:
    """What goes wrong, by fragment index (0 = the first fragment the service would persist); each fires once."""

    error_at: dict[int, int] = field(default_factory=dict)  # index -> ErrorId
    drop_at: set[int] = field(default_factory=set)
    reset_at: set[int] = field(default_factory=set)  # halfway through the fragment the connection is reset (RST)
    stall_at: set[int] = field(default_factory=set)  # halfway through: no more reading, acknowledging or persisting
    # By PutMedia request (0 = the first): refused with (HTTP status, x-amz-ErrorType), or accepted and never answered.
    refuse: dict[int, tuple[int, str]] = field(default_factory=dict)
    hang: set[int] = field(default_factory=set)
    stall_s: float = 30.0  # a stalled or unanswered request is closed after this long, if the client has not left
    idle_ack_s: float = 0.5  # an IDLE acknowledgement after this long without data
    idle_close_s: float = 30.0  # the request is ended after this long without data (the service: 30 s)
    drop_stall_s: float = 0.2  # a dropped connection first stalls this long (acknowledgements already sent arrive)


@dataclass
class Connection:
    """What one PutMedia request looked like, for the test to inspect."""

    headers: dict[str, str]
    opened_at: float = field(default_factory=time.monotonic)
    faulted_at: float | None = None  # when an injected fault (above) struck it
    acked_at: float | None = None  # when the latest acknowledgement was sent
    ended_at: float | None = None  # when the service ended the response (or the client left)
    status: int = 200  # 0: never answered
    fragments: list[int] = field(default_factory=list)  # timecodes persisted on this connection
    acks: list[str] = field(default_factory=list)  # event types sent
    ended: str = ""


@dataclass(frozen=True)
class Stored:
    timecode: int
    cluster: bytes  # the whole Cluster element
    last_ms: int  # its latest frame
    frames: list[Frame]  # audio and video: one per packet the producer sent


class Rejection(Exception):
    """A fragment breaks a rule: the service answers with an ERROR acknowledgement."""

    def __init__(self, error_id: int, why: str) -> None:
        super().__init__(why)
        self.error_id = error_id


class FakeKvs:
    """``with FakeKvs() as kvs:`` serves on ``kvs.endpoint_url`` from a thread of its own."""

    def __init__(self, faults: Faults | None = None, *, persist: bool = True, respond: bool = True) -> None:
        self.faults = faults or Faults()
        self.persist = persist  # a stream with retention sends PERSISTED; without, only RECEIVED
        self.respond = respond  # False: accept connections and never answer (a hung endpoint)
        self.connections: list[Connection] = []
        self.stored: list[Stored] = []
        self.header: bytes | None = None
        self.problems: list[str] = []  # rule violations seen (a correct producer causes none)
        self.endpoint_url = ""
        self.endpoint_lookups = 0  # successful GetDataEndpoint calls
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._runner: web.AppRunner | None = None

    def __enter__(self) -> Self:
        self._thread.start()
        port = asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(10)
        self.endpoint_url = f"http://127.0.0.1:{port}"
        return self

    def __exit__(self, *exc: object) -> None:
        asyncio.run_coroutine_threadsafe(self._stop(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()

    def mkv(self) -> bytes:
        """The stream as persisted: the MKV header, then every stored cluster in order."""
        assert self.header is not None, "no MKV header was received"
        return self.header + b"".join(s.cluster for s in self.stored)

    def timecodes(self) -> list[int]:
        return [s.timecode for s in self.stored]

    async def _start(self) -> int:
        app = web.Application()
        app.router.add_post("/putMedia", self._put_media)
        app.router.add_post("/getDataEndpoint", self._get_data_endpoint)
        self._runner = web.AppRunner(app, handle_signals=False, shutdown_timeout=0.5)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        return self._runner.addresses[0][1]

    async def _stop(self) -> None:
        await self._runner.cleanup()  # type: ignore[union-attr]
        rest = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for task in rest:
            task.cancel()
        await asyncio.gather(*rest, return_exceptions=True)

    async def _get_data_endpoint(self, request: web.Request) -> web.Response:
        """The control-plane call that says where to PutMedia: here."""
        body = await request.read()
        url = f"http://{request.host}/getDataEndpoint"
        problem = signature_problem(request.headers, url, body, CREDENTIALS, REGION)
        asked = json.loads(body or b"{}")
        if problem:
            status, error_type, message = (
                403,
                "NotAuthorizedException",
                f"The request signature is not valid: {problem}",
            )
        elif asked.get("APIName") != "PUT_MEDIA":
            status, error_type, message = 400, "InvalidArgumentException", "this fake serves only PUT_MEDIA"
        elif asked.get("StreamName") != STREAM:
            status, error_type, message = (
                404,
                "ResourceNotFoundException",
                f"stream {asked.get('StreamName')} not found",
            )
        else:
            self.endpoint_lookups += 1
            return web.json_response({"DataEndpoint": self.endpoint_url})
        return web.json_response({"message": message}, status=status, headers={"x-amzn-ErrorType": f"{error_type}:"})

    async def _put_media(self, request: web.Request) -> web.StreamResponse:
        number = len(self.connections)
        connection = Connection(dict(request.headers))
        self.connections.append(connection)
        if not self.respond:
            await asyncio.sleep(3600)
        if number in self.faults.hang:  # accepted, then silence: no status line, nothing read
            transport = request.transport
            connection.status, connection.faulted_at = 0, connection.opened_at
            connection.ended = await _until_client_leaves(request, self.faults.stall_s)
            connection.ended_at = time.monotonic()
            transport.close()  # type: ignore[union-attr]
            return web.Response()  # never sent: the connection is closed
        refused = self._refusal(request)
        if refused is None and number in self.faults.refuse:
            status, error_type = self.faults.refuse[number]
            refused = status, error_type, THROTTLE_MESSAGES.get(error_type, f"injected {error_type}")
            connection.faulted_at = time.monotonic()
        if refused is not None:
            status, error_type, message = refused
            connection.status, connection.ended, connection.ended_at = status, "refused", time.monotonic()
            return web.json_response({"message": message}, status=status, headers={"x-amz-ErrorType": f"{error_type}:"})  # as the reference names it
        response = web.StreamResponse()
        response.enable_chunked_encoding()
        await response.prepare(request)
        await _Session(self, request, response, connection).run()
        connection.ended_at = time.monotonic()
        return response

    def _refusal(self, request: web.Request) -> tuple[int, str, str] | None:
        """(status, error type, message) if the request is refused before any media is read."""
        headers = request.headers
        name, arn = headers.get("x-amzn-stream-name"), headers.get("x-amzn-stream-arn")
        stream_header = "x-amzn-stream-name" if name is not None else "x-amzn-stream-arn"
        url = f"http://{request.host}/putMedia"
        problem = signature_problem(headers, url, b"", CREDENTIALS, REGION, PUT_MEDIA_SIGNED | {stream_header})
        if problem:
            return 403, "NotAuthorizedException", f"The request signature is not valid: {problem}"
        if (name is None) == (arn is None):
            return 400, "InvalidArgumentException", "give exactly one of x-amzn-stream-name and x-amzn-stream-arn"
        if name != STREAM:
            return 404, "ResourceNotFoundException", f"stream {name or arn} not found"
        if headers.get("x-amzn-fragment-timecode-type") not in ("ABSOLUTE", "RELATIVE"):
            return 400, "InvalidArgumentException", "x-amzn-fragment-timecode-type must be ABSOLUTE or RELATIVE"
        try:
            float(headers.get("x-amzn-producer-start-timestamp", ""))
        except ValueError:
            return 400, "InvalidArgumentException", "x-amzn-producer-start-timestamp is not a timestamp"
        if headers.get("Transfer-Encoding", "").lower() != "chunked":
            return 400, "InvalidArgumentException", "PutMedia needs chunked transfer encoding"
        return None


class _Feed:
    """The request body as it arrives, read by the MKV parser; remembers when data last came."""

    def __init__(self, request: web.Request) -> None:
        self._request = request
        self._data = bytearray()
        self._eof = False
        self._arrived = asyncio.Event()
        self.last_data = asyncio.get_running_loop().time()

    async def pump(self) -> None:
        try:
            while chunk := await self._request.content.readany():
                self._data += chunk
                self.last_data = asyncio.get_running_loop().time()
                self._arrived.set()
        except (OSError, ClientError, HttpProcessingError):
            pass  # the client went away mid-body: for the parser, the body just ends here
        finally:
            self._eof = True
            self._arrived.set()

    async def read(self, n: int) -> bytes:
        while len(self._data) < n:
            if self._eof:
                raise EOFError(f"body ended {n - len(self._data)} bytes short")
            self._arrived.clear()
            await self._arrived.wait()
        out = bytes(self._data[:n])
        del self._data[:n]
        return out

    async def next_or_end(self) -> bool:
        """Wait for more data; False if the body ended cleanly here."""
        while not self._data and not self._eof:
            self._arrived.clear()
            await self._arrived.wait()
        return bool(self._data)


class _Session:
    """One PutMedia request's body: MKV in, acknowledgements out."""

    def __init__(self, kvs: FakeKvs, request: web.Request, response: web.StreamResponse, connection: Connection) -> None:
        self.kvs, self.request, self.response, self.connection = kvs, request, response, connection
        self.feed = _Feed(request)
        self.faults = kvs.faults
        self._write_lock = asyncio.Lock()
        self._numbers = _fragment_numbers()

    async def run(self) -> None:
        pump = asyncio.create_task(self.feed.pump())
        reader = asyncio.create_task(self._read())
        watchdog = asyncio.create_task(self._watch_idle())
        done, _ = await asyncio.wait({reader, watchdog}, return_when=asyncio.FIRST_COMPLETED)
        reader.cancel()
        watchdog.cancel()
        self.connection.ended = done.pop().result()
        transport = self.request.transport
        if self.connection.ended == "dropped":
            await asyncio.sleep(self.faults.drop_stall_s)  # the connection stalls, then dies
            transport.close()  # type: ignore[union-attr]
        elif self.connection.ended == "reset":
            sock = transport.get_extra_info("socket")  # type: ignore[union-attr]
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # close with RST, not FIN
            transport.abort()  # type: ignore[union-attr]
        elif self.connection.ended == "stalled":
            pump.cancel()  # what the client sends from now on stays unread
            self.connection.ended += f", then {await _until_client_leaves(self.request, self.faults.stall_s)}"
            transport.close()  # type: ignore[union-attr]
        else:
            try:
                async with self._write_lock:
                    await self.response.write_eof()
            except ConnectionResetError:
                self.connection.ended += ", client gone before the end"
            await asyncio.wait({pump}, timeout=CLIENT_LEAVE_S)  # the client hangs up after the response ends
        pump.cancel()

    async def _read(self) -> str:
        """Read the whole body; how the connection is to end."""
        try:
            return await self._read_stream()
        except Rejection as rejection:
            self.kvs.problems.append(str(rejection))
            await self._ack("ERROR", None, error_id=rejection.error_id)
            return "rejected"
        except (EOFError, ConnectionResetError):
            return "cut by the client"

    async def _read_stream(self) -> str:
        head = await read_head(self.feed.read)
        if head.ident != EBML:
            raise Rejection(4006, "the body does not start with an EBML header")
        ebml = await self.feed.read(_known(head))
        if dict(children(ebml)).get(DOC_TYPE) != b"matroska":
            raise Rejection(4006, "DocType is not matroska")
        segment = await read_head(self.feed.read)
        if segment.ident != SEGMENT:
            raise Rejection(4006, "no Segment after the EBML header")
        header = head.raw + ebml + segment.raw
        seen_tracks = False
        while await self.feed.next_or_end():
            element = await read_head(self.feed.read)
            if element.ident in (EBML, SEGMENT):
                raise Rejection(4006, "more than one MKV segment in one PutMedia request")
            if element.ident == CLUSTER:
                if not seen_tracks:
                    raise Rejection(4006, "a Cluster before Tracks")
                if self.kvs.header is None:
                    self.kvs.header = header
                outcome = await self._fragment(element)
                if outcome:
                    return outcome
                continue
            payload = await self.feed.read(_known(element))
            header += element.raw + payload
            if element.ident == INFO and uint(dict(children(payload)).get(TIMECODE_SCALE, b"\x0f\x42\x40")) != 1_000_000:
                raise Rejection(4006, "TimecodeScale is not 1 ms")
            if element.ident == TRACKS:
                self._check_tracks(payload)
                seen_tracks = True
        return "body ended"

    async def _fragment(self, head: Head) -> str:
        """Read one cluster; '' to go on, or how the connection ended."""
        index = len(self.kvs.stored)
        size = _known(head)
        first = await read_head(self.feed.read)
        if first.ident != TIMECODE:
            raise Rejection(4006, "a Cluster must start with its Timecode")
        timecode_bytes = await self.feed.read(_known(first))
        timecode = uint(timecode_bytes)
        await self._ack("BUFFERING", timecode)
        rest = size - len(first.raw) - len(timecode_bytes)
        for fault, faults in (("dropped", self.faults.drop_at), ("reset", self.faults.reset_at), ("stalled", self.faults.stall_at)):
            if index in faults:
                faults.discard(index)
                await self.feed.read(rest // 2)
                self.connection.faulted_at = time.monotonic()
                return fault
        body = first.raw + timecode_bytes + await self.feed.read(rest)
        last_ms, frames = self._check_fragment(body)
        await self._ack("RECEIVED", timecode)
        if index in self.faults.error_at:
            self.connection.faulted_at = time.monotonic()
            await self._ack("ERROR", timecode, error_id=self.faults.error_at.pop(index))
            return "error acknowledged"
        self.kvs.stored.append(Stored(timecode, head.raw + body, last_ms, frames))
        self.connection.fragments.append(timecode)
        if self.kvs.persist:
            await self._ack("PERSISTED", timecode)
        return ""

    def _check_tracks(self, payload: bytes) -> None:
        found = tracks(payload)
        for number, codec in EXPECTED_TRACKS.items():
            if number not in found or found[number][0] != codec or not found[number][1]:
                raise Rejection(4006, f"track {number} must be {codec} with codec private data, got {found.get(number)}")

    def _check_fragment(self, cluster: bytes) -> tuple[int, list[Frame]]:
        """The fragment's latest frame time and its frames, if it keeps the rules."""
        timecode, frames = cluster_frames(cluster)
        if timecode is None or not frames:
            raise Rejection(4006, "a Cluster without a timecode or frames")
        if frames[0].track != 1 or not frames[0].keyframe:
            raise Rejection(4006, f"fragment at {timecode} does not start with a video keyframe")
        tracks_seen = {f.track for f in frames}
        if not tracks_seen <= EXPECTED_TRACKS.keys():
            raise Rejection(4010, f"fragment at {timecode} has frames for tracks {sorted(tracks_seen)}")
        if tracks_seen != EXPECTED_TRACKS.keys():
            raise Rejection(4011, f"fragment at {timecode} lacks a frame for a track: has {sorted(tracks_seen)}")
        times = [timecode + f.offset_ms for f in frames]
        previous = self.kvs.stored[-1] if self.kvs.stored else None
        if previous is not None and min(times) <= previous.last_ms:
            raise Rejection(4004, f"fragment at {timecode} starts at {min(times)}, not after {previous.last_ms}")
        return max(times), frames

    async def _ack(self, event: str, timecode: int | None, error_id: int | None = None) -> None:
        ack: dict[str, object] = {"EventType": event}
        if timecode is not None:
            ack.update(FragmentTimecode=timecode, FragmentNumber=next(self._numbers))
        if error_id is not None:
            ack["ErrorId"] = error_id
        self.connection.acks.append(event)
        self.connection.acked_at = time.monotonic()
        async with self._write_lock:
            await self.response.write(json.dumps(ack, separators=(",", ":")).encode() + b"\n")

    async def _watch_idle(self) -> str:
        """IDLE acknowledgements while no data comes; the end of the request after ``idle_close_s``."""
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(self.faults.idle_ack_s)
            silent = loop.time() - self.feed.last_data
            if silent >= self.faults.idle_close_s:
                return "idle"
            if silent >= self.faults.idle_ack_s:
                try:
                    await self._ack("IDLE", None)
                except ConnectionResetError:
                    return "cut by the client"


async def _until_client_leaves(request: web.Request, limit_s: float) -> str:
    """Neither read nor answer; how it ended: the client left, or the service gave up after ``limit_s``."""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        transport = request.transport
        if transport is None or transport.is_closing():
            return "client left"
        await asyncio.sleep(0.02)
    return f"closed by the service after {limit_s:g} s"


def _known(head: Head) -> int:
    if head.size is None:
        raise Rejection(4006, f"element {head.ident:#x} of unknown size where a size is needed")
    return head.size


def _fragment_numbers() -> Iterator[str]:
    """47-digit fragment numbers, like the service's."""
    number = 91343852333181432392682062607743920146264517810
    while True:
        number += 1
        yield str(number)
