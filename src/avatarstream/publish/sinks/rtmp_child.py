"""The RTMP connection, in a child process of its own.

FFmpeg's RTMP client holds Python's GIL while it connects and does not honour
I/O timeouts in its handshake: a peer that accepts the TCP connection and then
says nothing froze the whole process (generation and every other output)
for as long as the peer stayed silent. Here it can only freeze this child,
which the parent kills when it stops taking packets (``RtmpSink``).

Protocol on stdin: length-prefixed messages (4-byte big-endian length), first
the StreamInfo as JSON, then one EncodedPacket each; end of input closes the
FLV stream. Errors go to stderr, the exit code says whether it succeeded.
"""

from __future__ import annotations

import base64
import json
import struct
import sys
from dataclasses import asdict
from fractions import Fraction
from typing import BinaryIO

from avatarstream.publish.muxer import PacketMuxer
from avatarstream.publish.packets import EncodedPacket, PacketKind, StreamInfo

_LENGTH = struct.Struct(">I")
_PACKET = struct.Struct(">BBqqII")  # kind, keyframe, pts, dts, time base numerator, denominator
_KINDS: tuple[PacketKind, ...] = ("video", "audio")
_BYTES_FIELDS = ("video_extradata", "audio_extradata")


def frame(payload: bytes) -> bytes:
    return _LENGTH.pack(len(payload)) + payload


def encode_info(info: StreamInfo) -> bytes:
    fields = asdict(info)
    for name in _BYTES_FIELDS:
        fields[name] = base64.b64encode(fields[name]).decode()
    return frame(json.dumps(fields).encode())


def encode_packet(packet: EncodedPacket) -> bytes:
    tb = packet.time_base
    head = _PACKET.pack(_KINDS.index(packet.kind), packet.keyframe, packet.pts, packet.dts, tb.numerator, tb.denominator)
    return frame(head + packet.data)


def _read_message(stream: BinaryIO) -> bytes | None:
    head = stream.read(_LENGTH.size)
    if len(head) < _LENGTH.size:
        return None
    (length,) = _LENGTH.unpack(head)
    body = stream.read(length)
    if len(body) < length:
        raise EOFError("the parent stopped in the middle of a message")
    return body


def _decode_info(body: bytes) -> StreamInfo:
    fields = json.loads(body)
    for name in _BYTES_FIELDS:
        fields[name] = base64.b64decode(fields[name])
    return StreamInfo(**fields)


def _decode_packet(body: bytes) -> EncodedPacket:
    kind, keyframe, pts, dts, num, den = _PACKET.unpack_from(body)
    return EncodedPacket(_KINDS[kind], body[_PACKET.size :], pts, dts, Fraction(num, den), bool(keyframe))


def main(url: str) -> int:
    stdin = sys.stdin.buffer
    first = _read_message(stdin)
    if first is None:
        return 0
    muxer = PacketMuxer(url, "flv", _decode_info(first))
    try:
        while (body := _read_message(stdin)) is not None:
            muxer.write(_decode_packet(body))
    finally:
        muxer.close()
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1]))
    except Exception as err:  # noqa: BLE001 - reported to the parent in one line
        print(f"{type(err).__name__}: {err}", file=sys.stderr)
        sys.exit(1)
