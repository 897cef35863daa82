"""An EBML/Matroska reader for the fake service, written apart from the package's writer.

Reading is done from the wire as it arrives (``read_head`` on an async byte
source) and, for elements already in memory, by ``children``.
"""

from __future__ import annotations

import struct
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass

EBML, SEGMENT, INFO, TRACKS, CLUSTER = 0x1A45DFA3, 0x18538067, 0x1549A966, 0x1654AE6B, 0x1F43B675
DOC_TYPE, TIMECODE_SCALE = 0x4282, 0x2AD7B1
TRACK_ENTRY, TRACK_NUMBER, CODEC_ID, CODEC_PRIVATE = 0xAE, 0xD7, 0x86, 0x63A2
TIMECODE, SIMPLE_BLOCK, BLOCK_GROUP = 0xE7, 0xA3, 0xA0

Read = Callable[[int], Awaitable[bytes]]


@dataclass(frozen=True)
class Head:
    ident: int
    size: int | None  # None: unknown size
    raw: bytes  # the ID and size bytes as received


@dataclass(frozen=True)
class Frame:
    track: int
    offset_ms: int
    keyframe: bool


def _vint_length(first: int) -> int:
    for length in range(1, 9):
        if first & (0x80 >> (length - 1)):
            return length
    raise ValueError("invalid EBML variable-size integer (first byte 0)")


async def read_head(read: Read) -> Head:
    """The next element's ID and size from a byte source."""
    first = await read(1)
    rest = await read(_vint_length(first[0]) - 1)
    id_bytes = first + rest
    size_first = await read(1)
    size_rest = await read(_vint_length(size_first[0]) - 1)
    size_bytes = size_first + size_rest
    return Head(int.from_bytes(id_bytes, "big"), _size_value(size_bytes), id_bytes + size_bytes)


def _size_value(data: bytes) -> int | None:
    value = int.from_bytes(data, "big") & ((1 << (7 * len(data))) - 1)
    return None if value == (1 << (7 * len(data))) - 1 else value


def children(data: bytes) -> Iterator[tuple[int, bytes]]:
    """(ID, payload) of each element in ``data``, which must hold whole elements of known size."""
    pos = 0
    while pos < len(data):
        id_len = _vint_length(data[pos])
        ident = int.from_bytes(data[pos : pos + id_len], "big")
        pos += id_len
        size_len = _vint_length(data[pos])
        size = _size_value(data[pos : pos + size_len])
        pos += size_len
        if size is None or pos + size > len(data):
            raise ValueError(f"element {ident:#x} overruns its parent")
        yield ident, data[pos : pos + size]
        pos += size


def uint(payload: bytes) -> int:
    return int.from_bytes(payload, "big")


def tracks(payload: bytes) -> dict[int, tuple[str, bytes]]:
    """Track number -> (CodecID, CodecPrivate) of a Tracks element."""
    found = {}
    for ident, entry in children(payload):
        if ident == TRACK_ENTRY:
            fields = dict(children(entry))
            found[uint(fields.get(TRACK_NUMBER, b""))] = (
                fields.get(CODEC_ID, b"").decode(),
                fields.get(CODEC_PRIVATE, b""),
            )
    return found


def cluster_frames(payload: bytes) -> tuple[int | None, list[Frame]]:
    """The cluster timecode (None if missing) and its frames, in stored order."""
    timecode, frames = None, []
    for ident, body in children(payload):
        if ident == TIMECODE:
            timecode = uint(body)
        elif ident == SIMPLE_BLOCK:
            track_len = _vint_length(body[0])
            track = int.from_bytes(body[:track_len], "big") & ((1 << (7 * track_len)) - 1)
            (offset,) = struct.unpack_from(">h", body, track_len)
            frames.append(Frame(track, offset, bool(body[track_len + 2] & 0x80)))
        elif ident == BLOCK_GROUP:
            raise ValueError("BlockGroup not expected from this producer")
    return timecode, frames
