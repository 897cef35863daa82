"""H.264 framing: Annex B (start codes) <-> AVCC (length prefixes) and the avcC record.

Encoders emit Annex B; MP4, FLV and Kinesis want AVCC plus an
AVCDecoderConfigurationRecord, and WebRTC packetizers want Annex B again, so
``EncodedPacket`` carries AVCC and each side converts at its edge.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

NAL_SPS = 7
NAL_PPS = 8
_HIGH_PROFILES = (100, 110, 122, 144)  # their avcC carries chroma format and bit depths


def split_annexb(data: bytes) -> list[bytes]:
    """The NAL units of an Annex B byte stream, without start codes or trailing zero bytes.

    A NAL unit never ends in a zero byte, so zeros before a start code (the
    4-byte form's leading zero, trailing_zero_8bits) are dropped safely.
    """
    units = []
    for piece in data.split(b"\x00\x00\x01")[1:]:
        unit = piece.rstrip(b"\x00")
        if unit:
            units.append(unit)
    return units


def avcc_from_annexb(data: bytes) -> bytes:
    """Re-frame an Annex B access unit with 4-byte big-endian length prefixes."""
    return b"".join(struct.pack(">I", len(unit)) + unit for unit in split_annexb(data))


def split_avcc(data: bytes) -> list[bytes]:
    """The NAL units of a 4-byte-length-prefixed access unit."""
    units, offset = [], 0
    while offset + 4 <= len(data):
        (size,) = struct.unpack_from(">I", data, offset)
        units.append(data[offset + 4 : offset + 4 + size])
        offset += 4 + size
    if offset != len(data):
        raise ValueError("truncated AVCC access unit")
    return units


def annexb_from_avcc(data: bytes, prefix: Sequence[bytes] = ()) -> bytes:
    """Annex B bytes of an AVCC access unit, with ``prefix`` NAL units (e.g. SPS/PPS) first."""
    return b"".join(b"\x00\x00\x00\x01" + unit for unit in [*prefix, *split_avcc(data)])


def decoder_config(sps: bytes, pps: bytes) -> bytes:
    """The AVCDecoderConfigurationRecord (avcC box payload) for one SPS and one PPS."""
    profile = sps[1]
    record = bytes([1, profile, sps[2], sps[3], 0xFF, 0xE1]) + struct.pack(">H", len(sps)) + sps
    record += b"\x01" + struct.pack(">H", len(pps)) + pps
    if profile in _HIGH_PROFILES:
        chroma_format, luma_depth, chroma_depth = _high_profile_fields(sps)
        record += bytes([0xFC | chroma_format, 0xF8 | luma_depth, 0xF8 | chroma_depth, 0])
    return record


def decoder_config_from_annexb(data: bytes) -> bytes:
    """Build avcC from Annex B bytes that contain an SPS and a PPS (an encoder's global header)."""
    units = split_annexb(data)
    sps = next((u for u in units if u[0] & 0x1F == NAL_SPS), None)
    pps = next((u for u in units if u[0] & 0x1F == NAL_PPS), None)
    if sps is None or pps is None:
        raise ValueError("H.264 header has no SPS/PPS")
    return decoder_config(sps, pps)


def parameter_sets(config: bytes) -> list[bytes]:
    """The SPS and PPS NAL units stored in an avcC record, SPS first."""
    units: list[bytes] = []
    offset = 5
    for _ in range(2):  # the SPS list, then the PPS list
        count = config[offset] & (0x1F if not units else 0xFF)
        offset += 1
        for _ in range(count):
            (size,) = struct.unpack_from(">H", config, offset)
            units.append(config[offset + 2 : offset + 2 + size])
            offset += 2 + size
    return units


def _high_profile_fields(sps: bytes) -> tuple[int, int, int]:
    """chroma_format_idc and bit depths (minus 8) from a High-profile SPS."""
    bits = _Bits(_unescape(sps[4:]))
    bits.ue()  # seq_parameter_set_id
    chroma_format = bits.ue()
    if chroma_format == 3:
        bits.bit()  # separate_colour_plane_flag
    return chroma_format, bits.ue(), bits.ue()


def _unescape(rbsp: bytes) -> bytes:
    """Drop emulation-prevention bytes (00 00 03 -> 00 00)."""
    return rbsp.replace(b"\x00\x00\x03", b"\x00\x00")


class _Bits:
    """Just enough of an Exp-Golomb bit reader for the SPS fields avcC needs."""

    def __init__(self, data: bytes) -> None:
        self._data = data
        self._pos = 0

    def bit(self) -> int:
        byte = self._data[self._pos >> 3]
        value = (byte >> (7 - (self._pos & 7))) & 1
        self._pos += 1
        return value

    def ue(self) -> int:
        zeros = 0
        while self.bit() == 0:
            zeros += 1
        value = 0
        for _ in range(zeros):
            value = (value << 1) | self.bit()
        return (1 << zeros) - 1 + value
