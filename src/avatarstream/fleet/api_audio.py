"""The audio WebSocket and uploads at the ingress: decoded here, then sent on to the session's replica in order.

The protocol is the single server's (serve/api_audio_ws.py): binary PCM of the
query's format or whole encoded clips, JSON ``interrupt`` and ``end`` controls, events back.
When the session's replica is lost the socket closes with 1012 and the
session resumes elsewhere: reconnect to the same URL and go on sending from
``speech_received_s`` of the session's JSON (what the fleet had taken).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Request, WebSocket

from avatarstream.errors import InputError
from avatarstream.fleet.sessions import Close, Fleet, FleetSession
from avatarstream.serve.api_audio_ws import CLEAN_CLOSES, claim_socket, message_limit, receive_messages, refuse, socket_open
from avatarstream.serve.api_sessions import receive_audio
from avatarstream.serve.audio_input import ClipSegment, PcmDecoder
from avatarstream.serve.problems import ServeError
from avatarstream.serve.uploads import open_upload_audio, store_clip

router = APIRouter()


async def receive_clip(request: Request, folder: Path, max_bytes: int) -> ClipSegment:
    path = await receive_audio(request, folder, max_bytes, asyncio.to_thread)
    return ClipSegment(await asyncio.to_thread(open_upload_audio, path), path)


@router.websocket("/sessions/{sid}/audio")
async def audio_socket(ws: WebSocket, sid: str, format: str = "s16le", rate: int = 16000, channels: int = 1, token: str | None = None) -> None:
    fleet: Fleet = ws.app.state.fleet
    try:
        fleet.auth.check(ws.headers.get("authorization"), token)
        session = fleet.get(sid)
        decoder = None if format == "encoded" else PcmDecoder(format, rate, channels)
        claim_socket(session)
    except (ServeError, InputError) as err:
        await refuse(ws, err)
        return
    closed_here: list[Close] = []
    code = 1006
    async with socket_open(session, decoder, ws, lambda events: _send_events(ws, events, closed_here)):
        code = await _receive(ws, fleet, session, decoder)
    if code not in CLEAN_CLOSES and not closed_here:  # a crashed client ends its session, as on the single server
        await fleet.close_if_running(sid)


async def _receive(ws: WebSocket, fleet: Fleet, session: FleetSession, decoder: PcmDecoder | None) -> int:
    async def speak(data: bytes) -> None:
        fleet.check_takes_speech(session)
        if decoder is None:
            await session.feed.put(await asyncio.to_thread(store_clip, data, session.folder))
            return
        samples = decoder.decode(data)
        session.received += samples.size
        await session.feed.put(samples)

    def touch() -> None:
        session.last_active = time.monotonic()

    controls = {"interrupt": lambda: fleet.interrupt(session), "end": lambda: fleet.end(session)}
    return await receive_messages(ws, message_limit(fleet.settings.serve.max_upload_bytes), touch, speak, controls)


async def _send_events(ws: WebSocket, events: asyncio.Queue[dict[str, Any] | Close], closed_here: list[Close]) -> None:
    while True:
        message = await events.get()
        if isinstance(message, Close):
            closed_here.append(message)
            with contextlib.suppress(Exception):
                await ws.close(code=message.code, reason=message.reason[:120])
            return
        with contextlib.suppress(Exception):  # the client may be gone; the receive loop notices
            await ws.send_json(message)
