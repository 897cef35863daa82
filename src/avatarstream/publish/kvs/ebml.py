"""EBML element encoding, the byte layer under Matroska (RFC 8794).

Only what a streaming writer needs: elements of known size built in memory,
and the "unknown size" marker that lets a Segment stay open for as long as the
stream lasts.
"""

from __future__ import annotations

import struct

UNKNOWN_SIZE = b"\x01\xff\xff\xff\xff\xff\xff\xff"  # 8-byte size with all value bits set (RFC 8794 §6.2)
_MAX_SIZE = 2**56 - 2  # largest size an 8-byte VINT can carry (all ones is reserved for "unknown")


def vint(value: int) -> bytes:
    """The shortest variable-size integer for ``value``; all-ones values are reserved, so skip them."""
    if not 0 <= value <= _MAX_SIZE:
        raise ValueError(f"EBML size {value} out of range")
    length = 1
    while value >= 2 ** (7 * length) - 1:
        length += 1
    return (value | 1 << (7 * length)).to_bytes(length, "big")


def element_id(ident: int) -> bytes:
    """Element IDs are written as they are specified: the marker bit is part of the ID."""
    return ident.to_bytes((ident.bit_length() + 7) // 8, "big")


def element(ident: int, payload: bytes) -> bytes:
    return element_id(ident) + vint(len(payload)) + payload


def master(ident: int, *children: bytes) -> bytes:
    return element(ident, b"".join(children))


def uint(ident: int, value: int) -> bytes:
    if value < 0:
        raise ValueError(f"EBML unsigned integer must be >= 0, got {value}")
    return element(ident, value.to_bytes(max(1, (value.bit_length() + 7) // 8), "big"))


def float64(ident: int, value: float) -> bytes:
    return element(ident, struct.pack(">d", value))


def string(ident: int, value: str) -> bytes:
    return element(ident, value.encode("ascii"))


def open_ended(ident: int) -> bytes:
    """The head of a master element whose end is the end of the stream."""
    return element_id(ident) + UNKNOWN_SIZE
