"""The frames WebSocket of a live session: every published frame, raw, with the audio that plays with it.

For a client that shows or forwards the avatar itself (a voice agent's own transport) rather than watching an encoded
stream. The first message is JSON text (``FramesStream``: frame size and rate, audio format); then one binary message
per frame, as chunks are published: a 4-byte little-endian length, that many bytes of JSON (``FrameHeader``), the frame
as RGB24 (height x width x 3 bytes) and its audio as interleaved s16le. The socket closes (1000) when the session ends.
A client that reads slower than the session publishes loses the oldest chunks (a gap in ``frame``), so it never holds
the session back. What the server holds for one client is bounded: its queue (media_watch.py), the chunk being sent and
the connection's write buffer (uvicorn waits below asyncio's 64 KiB high-water mark before each message, so that
buffer holds at most that plus one message). A client that takes nothing for ``SEND_TIMEOUT_S`` is dropped: otherwise
it would hold that much, and keep its session from being closed as idle, for as long as its connection stays up.
docs/api.md describes it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import struct
import time

import numpy as np
from fastapi import APIRouter, WebSocket
from pydantic import BaseModel, Field
from starlette.websockets import WebSocketDisconnect

from avatarstream.errors import InputError
from avatarstream.serve.api_audio_ws import refuse
from avatarstream.serve.context import ServerContext
from avatarstream.serve.logs import event
from avatarstream.serve.media_watch import Published
from avatarstream.serve.problems import ServeError

router = APIRouter()

SEND_TIMEOUT_S = 10.0  # a client that has taken no frame for this long is dropped


class FramesStream(BaseModel):
    """Server -> client, the first message (text): what every chunk that follows holds."""

    type: str = "stream"
    fps: int
    width: int
    height: int
    sample_rate: int = Field(description="of the audio after the frames")
    channels: int = Field(description="of the audio after the frames (interleaved)")


class FrameHeader(BaseModel):
    """The JSON header of each binary message."""

    frame: int = Field(description="index of the frame in the session's timeline")
    audio_samples: int = Field(description="audio samples per channel after the picture")
    speech: float = Field(description="the share of the frame's audio that is speech (0 = idle)")


@router.websocket("/sessions/{sid}/frames")
async def frames_socket(ws: WebSocket, sid: str, token: str | None = None) -> None:
    server: ServerContext = ws.app.state.server
    try:
        server.auth.check(ws.headers.get("authorization"), token)
        session = server.manager.get(sid, "live")
    except (ServeError, InputError) as err:
        await refuse(ws, err)
        return
    await ws.accept()
    queue = session.media.watch()
    session.watchers += 1
    gone = asyncio.create_task(_until_gone(ws))
    try:
        settings = session.built.encoder
        pipeline = session.pipeline
        stream = FramesStream(
            fps=pipeline.fps, width=settings.width, height=settings.height, sample_rate=pipeline.output_sample_rate, channels=pipeline.output_channels
        )
        await ws.send_text(stream.model_dump_json())
        while not gone.done():
            item = await _next(queue, gone)
            if item is None:
                break
            for message in await server.blocking(encode, item):
                await asyncio.wait_for(ws.send_bytes(message), SEND_TIMEOUT_S)
        if not gone.done():
            await asyncio.wait_for(ws.close(1000), SEND_TIMEOUT_S)
    except (WebSocketDisconnect, RuntimeError):  # the client went away mid-send
        pass
    except asyncio.TimeoutError:  # no close frame: it could not get past what the client has not read either
        event("frames client dropped", logging.WARNING, session=session.log_id, reason=f"it took no frame for {SEND_TIMEOUT_S:g} s")
    finally:
        session.media.unwatch(queue)
        session.watchers -= 1
        session.last_active = time.monotonic()
        gone.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await gone


async def _next(queue: asyncio.Queue[Published | None], gone: asyncio.Task[None]) -> Published | None:
    """The next chunk, or None once the session ended or the client left."""
    getting = asyncio.ensure_future(queue.get())
    await asyncio.wait([getting, gone], return_when=asyncio.FIRST_COMPLETED)
    if getting.done():
        return getting.result()
    getting.cancel()
    return None


async def _until_gone(ws: WebSocket) -> None:
    """Read (and ignore) what the client sends until it disconnects."""
    while (await ws.receive())["type"] != "websocket.disconnect":
        pass


def encode(item: Published) -> list[bytes]:
    """A chunk as one binary message per frame (see the module's docstring)."""
    chunk = item.chunk
    audio = (np.clip(chunk.audio.T, -1.0, 1.0) * 32767.0).astype("<i2")  # [samples, channels]: interleaved
    per_frame = audio.shape[0] // chunk.num_frames
    messages = []
    for i, speech in enumerate(item.speech):
        head = FrameHeader(frame=chunk.first_frame + i, audio_samples=per_frame, speech=round(speech, 4)).model_dump_json().encode()
        picture = np.ascontiguousarray(chunk.frames[i], dtype=np.uint8).tobytes()
        messages.append(b"".join([struct.pack("<I", len(head)), head, picture, audio[i * per_frame : (i + 1) * per_frame].tobytes()]))
    return messages
