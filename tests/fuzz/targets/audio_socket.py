"""The audio WebSocket's protocol: the query's PCM format, then binary PCM messages and JSON text controls, through the
server's own receive loop (``receive_messages``) and PCM decoder. A bad message must be answered with one ``error``
event (one line) and the socket must go on; the loop must never raise.

An input is the query, then the messages: ``[format][rate: 3 bytes][channels]``, then ``[kind][length: 2 bytes][payload]``
each (an odd kind is a text message, its payload read as UTF-8 as a WebSocket text frame is).
"""

from __future__ import annotations

import asyncio
import json
import struct
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
from starlette.websockets import WebSocketState

from avatarstream.serve.api_audio_ws import receive_messages
from avatarstream.serve.audio_input import PcmDecoder
from fuzz.contract import Breach, Run
from fuzz.target import Target

FORMATS = ("s16le", "f32le", "s24le")
#: The largest message taken: small, so the over-the-limit answer is within the fuzzer's reach.
LIMIT = 4096


class FakeSocket:
    """What ``receive_messages`` uses of a Starlette WebSocket: the client's messages in order, then a clean close."""

    application_state = WebSocketState.CONNECTED

    def __init__(self, messages: list[dict[str, Any]]) -> None:
        self._messages = iter(messages)
        self.sent: list[dict[str, Any]] = []

    async def receive(self) -> dict[str, Any]:
        return next(self._messages, {"type": "websocket.disconnect", "code": 1000})

    async def send_json(self, message: dict[str, Any]) -> None:
        self.sent.append(message)


def parse(data: bytes) -> tuple[tuple[str, int, int], list[dict[str, Any]]]:
    """The query (format, rate, channels) and the messages an input holds."""
    head, rest = data[:5].ljust(5, b"\0"), data[5:]
    query = (FORMATS[head[0] % len(FORMATS)], int.from_bytes(head[1:4], "little"), head[4] % 4)
    messages = []
    while len(rest) >= 3:
        kind, length = rest[0], struct.unpack("<H", rest[1:3])[0]
        payload, rest = rest[3 : 3 + length], rest[3 + length :]
        text = payload.decode("utf-8", "replace") if kind % 2 else None
        messages.append({"type": "websocket.receive", "bytes": None if text is not None else payload, "text": text})
    return query, messages


def encode(query: tuple[int, int, int], *messages: bytes | str) -> bytes:
    """An input of the query (format index, rate, channels) and ``messages`` (str: text, bytes: binary)."""
    out = bytes([query[0]]) + query[1].to_bytes(3, "little") + bytes([query[2]])
    for message in messages:
        payload = message.encode() if isinstance(message, str) else message
        out += bytes([1 if isinstance(message, str) else 0]) + struct.pack("<H", len(payload)) + payload
    return out


@contextmanager
def _prepare(folder: Path) -> Iterator[tuple[Run, list[bytes]]]:
    loop = asyncio.new_event_loop()

    def run(data: bytes) -> None:
        (fmt, rate, channels), messages = parse(data)
        decoder = PcmDecoder(fmt, rate, channels)  # the handshake: a bad query is refused here with an InputError
        try:
            ws = FakeSocket(messages)
            controls = {"interrupt": _nothing, "end": _nothing}
            code = loop.run_until_complete(receive_messages(ws, LIMIT, lambda: None, _speaker(decoder), controls))  # type: ignore[arg-type]
        finally:
            decoder.close()
        if code != 1000:
            raise Breach(f"the loop returned close code {code} after a clean close", "close-code")
        for event in ws.sent:
            if event.get("type") != "error" or not event.get("message") or "\n" in event["message"]:
                raise Breach(f"a refused message was answered with {event!r}", "event")

    tone = (np.sin(np.arange(800) / 5) * 8000).astype("<i2").tobytes()
    seeds = [
        encode((0, 16000, 1), tone, json.dumps({"type": "interrupt"}), tone[:400], json.dumps({"type": "end"})),
        encode((1, 48000, 2), np.zeros(960, "<f4").tobytes(), '{"type":"end"}', "hello"),
        encode((0, 8000, 2), b"\x01\x02\x03", '{"type": "explode"}', bytes(LIMIT + 1)),
        encode((0, 16000, 1), b"", "not json"),  # found: an empty PCM message failed FFmpeg's resampler and broke the socket
    ]
    try:
        yield run, seeds
    finally:
        loop.close()


async def _nothing() -> None:
    return None


def _speaker(decoder: PcmDecoder) -> Any:
    async def speak(data: bytes) -> None:
        decoder.decode(data)

    return speak


TARGETS = [
    Target(
        "audio-socket",
        _prepare,
        ("avatarstream.serve.api_audio_ws", "avatarstream.serve.audio_input", "avatarstream.serve.ws_messages"),
        words=('{"type": "interrupt"}', '{"type": "end"}', '"type"', '"interrupt"', '"end"', "\x80\x3e\x00", "\x44\xac\x00", "\x80\xbb\x00"),
    ),
]
