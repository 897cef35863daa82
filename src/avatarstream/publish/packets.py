"""Encoded media as it leaves the encoder and fans out to sinks (DESIGN.md §7).

One encoder produces these once; every sink (file, HLS, RTMP, Kinesis Video
Streams, WebRTC preview) muxes or forwards the same bytes, so adding a sink
never adds an encode.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Literal

PacketKind = Literal["video", "audio"]


@dataclass(frozen=True)
class StreamInfo:
    """What a sink needs to set up its container before the first packet."""

    width: int
    height: int
    fps: int
    video_extradata: bytes  # H.264 avcC (AVCDecoderConfigurationRecord): SPS/PPS for AVCC-framed packets
    audio_rate: int
    audio_channels: int
    audio_extradata: bytes  # AAC AudioSpecificConfig


@dataclass(frozen=True)
class EncodedPacket:
    """One encoded access unit. Video is AVCC-framed (length-prefixed NAL units), audio raw AAC."""

    kind: PacketKind
    data: bytes
    pts: int
    dts: int
    time_base: Fraction  # video: 1/fps, audio: 1/audio_rate
    keyframe: bool

    @property
    def pts_s(self) -> float:
        return float(self.pts * self.time_base)
