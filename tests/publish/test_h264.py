"""H.264 framing helpers against FFmpeg's own view of the same bitstream."""

from __future__ import annotations

import av
import pytest

from avatarstream.publish.encoders.pyav import PyAvEncoder
from avatarstream.publish.h264 import (
    annexb_from_avcc,
    avcc_from_annexb,
    decoder_config,
    parameter_sets,
    split_annexb,
    split_avcc,
)
from avatarstream.publish.settings import EncoderSettings
from mp4_checks import make_chunks

SPS = bytes.fromhex("6764001eacb2")
PPS = bytes.fromhex("68ebe3cb")


def test_split_annexb_handles_3_and_4_byte_start_codes() -> None:
    data = b"\x00\x00\x00\x01" + SPS + b"\x00\x00\x01" + PPS + b"\x00\x00\x01\x65\x88\x00"
    assert split_annexb(data) == [SPS, PPS, b"\x65\x88"]


def test_avcc_round_trip() -> None:
    avcc = avcc_from_annexb(b"\x00\x00\x00\x01\x65\x01\x02\x00\x00\x01\x41\x03")
    assert avcc == b"\x00\x00\x00\x03\x65\x01\x02\x00\x00\x00\x02\x41\x03"
    assert split_avcc(avcc) == [b"\x65\x01\x02", b"\x41\x03"]
    assert annexb_from_avcc(avcc, [SPS]) == b"\x00\x00\x00\x01" + SPS + b"\x00\x00\x00\x01\x65\x01\x02\x00\x00\x00\x01\x41\x03"


def test_truncated_avcc_is_refused() -> None:
    with pytest.raises(ValueError, match="truncated"):
        split_avcc(b"\x00\x00\x00\x09\x65")


def test_decoder_config_layout_and_parameter_sets() -> None:
    config = decoder_config(SPS, PPS)
    assert config[:6] == bytes([1, 0x64, 0x00, 0x1E, 0xFF, 0xE1])
    assert parameter_sets(config) == [SPS, PPS]


def test_encoder_output_decodes_after_conversion_back_to_annexb() -> None:
    """What the WebRTC relay sends (Annex B with SPS/PPS at keyframes) is a stream FFmpeg decodes."""
    encoder = PyAvEncoder(EncoderSettings(width=64, height=48, fps=25))
    packets = [p for chunk in make_chunks([30]) for p in encoder.encode(chunk)] + encoder.flush()
    sets = parameter_sets(encoder.stream_info.video_extradata)
    decoder = av.CodecContext.create("h264", "r")
    frames = 0
    for packet in (p for p in packets if p.kind == "video"):
        frames += len(decoder.decode(av.Packet(annexb_from_avcc(packet.data, sets if packet.keyframe else ()))))
    frames += len(decoder.decode(None))
    assert frames == 30
    assert sets[0][0] & 0x1F == 7 and sets[1][0] & 0x1F == 8
