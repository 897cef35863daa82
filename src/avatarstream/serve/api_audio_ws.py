"""The audio WebSocket of a live session: audio in as it arrives, what happens out as JSON events.

Binary messages are raw PCM in the format of the query (``format=s16le|f32le``,
``rate``, ``channels``) or, with ``format=encoded``, one whole WAV/MP3/FLAC/OGG
clip each. Text messages are JSON controls: ``{"type": "interrupt"}`` and
``{"type": "end"}`` (speak what is queued, then close). The
server sends ``frames`` events as video is published, ``interrupted``,
``error`` (bad data: the session goes on) and ``closed`` (ws_messages.py;
docs/api.md). A socket that drops
without a close handshake (a crashed client) closes its session at once; a
close with code 1000 or 1001 leaves it open (DELETE or the idle timeout end it).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Mapping
from typing import Any, Protocol

from fastapi import APIRouter, WebSocket
from pydantic import ValidationError
from starlette.responses import JSONResponse
from starlette.websockets import WebSocketState

from avatarstream.errors import InputError
from avatarstream.serve.audio_input import ClipSegment, PcmDecoder, PcmSegment
from avatarstream.serve.auth import CHALLENGE
from avatarstream.serve.context import ServerContext
from avatarstream.serve.problems import Conflict, ServeError
from avatarstream.serve.session import Session
from avatarstream.serve.uploads import store_clip
from avatarstream.serve.ws_messages import CLIENT_MESSAGES, ErrorEvent

router = APIRouter()
CLEAN_CLOSES = {1000, 1001}
#: The largest message an audio socket takes (the WebSocket stack refuses a larger frame before reading it): PCM
#: messages carry at most MAX_MESSAGE_S anyway; an encoded clip this size is minutes of compressed speech.
MAX_MESSAGE_BYTES = 8 * 2**20  # a lost connection reads as 1005 or 1006, depending on the server's WebSocket stack


@router.websocket("/sessions/{sid}/audio")
async def audio_socket(ws: WebSocket, sid: str, format: str = "s16le", rate: int = 16000, channels: int = 1, token: str | None = None) -> None:
    server: ServerContext = ws.app.state.server
    try:
        server.auth.check(ws.headers.get("authorization"), token)
        session = server.manager.get(sid, "live")
        decoder = None if format == "encoded" else PcmDecoder(format, rate, channels)
        claim_socket(session)
    except (ServeError, InputError) as err:
        await refuse(ws, err)
        return
    code = 1006
    async with socket_open(session, decoder, ws, lambda events: _send_events(ws, events)):
        code = await _receive(ws, server, session, decoder)
    if code not in CLEAN_CLOSES:
        await server.manager.close_if_running(session.id)


class SocketSession(Protocol):
    """What an audio socket needs of its session (the single server's Session, the fleet's FleetSession)."""

    sockets: int
    last_active: float

    def listen(self) -> asyncio.Queue[Any]: ...

    def unlisten(self, queue: asyncio.Queue[Any]) -> None: ...


def claim_socket(session: SocketSession) -> None:
    """A session takes one audio socket at a time: two senders would interleave their audio into one queue, and each
    socket would add its own backlog. The claim is taken here, before any await, so two handshakes cannot both pass."""
    if session.sockets:
        raise Conflict("this session already has an audio socket; close it before opening another (one sender per session)")
    session.sockets += 1


@contextlib.asynccontextmanager
async def socket_open(
    session: SocketSession, decoder: PcmDecoder | None, ws: WebSocket, send: Callable[[asyncio.Queue[Any]], Coroutine[Any, Any, None]]
) -> AsyncIterator[None]:
    """Accept the socket ``claim_socket`` took for the session; while it is open ``send`` forwards the session's events to it."""
    events = session.listen()
    sender: asyncio.Task[None] | None = None
    try:
        await ws.accept()
        sender = asyncio.create_task(send(events))
        yield
    finally:
        if decoder is not None:
            decoder.close()
        session.sockets -= 1
        session.last_active = time.monotonic()
        session.unlisten(events)
        if sender is not None:
            sender.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await sender


async def _receive(ws: WebSocket, server: ServerContext, session: Session, decoder: PcmDecoder | None) -> int:
    """Read until the client goes away; returns its close code."""
    live = session.live
    assert live is not None
    if decoder is not None:
        session.check_audio_rate(decoder.rate)

    async def speak(data: bytes) -> None:
        session.check_takes_speech()
        if decoder is not None:  # PCM is held in memory: its length counts against the queue limit before it is decoded
            await live.wait_for_room(decoder.seconds(data))
            segment: PcmSegment | ClipSegment = PcmSegment(decoder.decode(data))
        else:  # a clip is stored on disk and read as it is spoken
            segment = await server.blocking(store_clip, data, session.folder)
            session.check_audio_rate(segment.sample_rate)
            await live.wait_for_room()
        session.check_takes_speech()  # it may have begun to end while this piece waited for room
        live.push(segment)

    async def interrupt() -> None:
        session.interrupt()

    async def end() -> None:
        session.end()

    def touch() -> None:
        session.last_active = time.monotonic()

    controls = {"interrupt": interrupt, "end": end}
    return await receive_messages(ws, message_limit(server.settings.max_upload_bytes), touch, speak, controls, lambda: session.id not in server.manager.active)


def message_limit(max_upload_bytes: int) -> int:
    """The largest WebSocket message taken: an encoded clip up to MAX_MESSAGE_BYTES (or the upload limit, if smaller)."""
    return min(max_upload_bytes, MAX_MESSAGE_BYTES)


async def receive_messages(
    ws: WebSocket,
    limit: int,
    touch: Callable[[], None],
    speak: Callable[[bytes], Awaitable[None]],
    controls: Mapping[str, Callable[[], Awaitable[Any]]],
    ended: Callable[[], bool] = lambda: False,
) -> int:
    """The socket's protocol (the single server's and the fleet's): binary audio to ``speak``, JSON controls to ``controls``
    by their type, a bad message answered with an error event. Returns the client's close code (1000 once ``ended``)."""
    while True:
        message = await ws.receive()
        if message["type"] == "websocket.disconnect":
            return int(message.get("code") or 1006)
        touch()
        data, text = message.get("bytes"), message.get("text")
        try:
            if data is not None:
                if len(data) > limit:
                    raise InputError(f"message of {len(data)} bytes is over the limit of {limit} bytes; send smaller pieces")
                await speak(data)
            elif text is not None:
                await controls[_control_type(text)]()
        except (InputError, ServeError) as err:  # ServeError: the fleet's replica refused (its session is resuming, say)
            await _send(ws, ErrorEvent(message=str(err)).model_dump())
        if ended():
            return 1000


def _control_type(text: str) -> str:
    """The type of a valid control message."""
    for command in CLIENT_MESSAGES:
        with contextlib.suppress(ValidationError):
            kind: str = command.model_validate_json(text).type  # type: ignore[attr-defined]
            return kind
    raise InputError('text messages are JSON controls: {"type": "interrupt"} or {"type": "end"}')


async def _send_events(ws: WebSocket, events: asyncio.Queue[dict[str, Any]]) -> None:
    while True:
        message = await events.get()
        await _send(ws, message)


async def _send(ws: WebSocket, message: dict[str, Any]) -> None:
    if ws.application_state == WebSocketState.CONNECTED:
        with contextlib.suppress(Exception):  # the client may be gone; the receive loop notices
            await ws.send_json(message)


async def refuse(ws: WebSocket, err: Exception) -> None:
    """Answer the handshake with an HTTP error and a JSON body where the server can, else close with a reason."""
    status = err.status if isinstance(err, ServeError) else 422
    headers = CHALLENGE if status == 401 else None
    if "websocket.http.response" in ws.scope.get("extensions", {}):
        await ws.send_denial_response(JSONResponse({"detail": str(err)}, status_code=status, headers=headers))
    else:
        await ws.accept()
        await ws.close(code=1008, reason=str(err)[:120])
