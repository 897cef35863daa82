"""The Matroska layout Kinesis Video Streams ingests: one open Segment, one Cluster per fragment.

PutMedia reads a single MKV segment per request: the EBML header, Segment
Info and Tracks, then clusters, each of which becomes one fragment. Track 1 is
H.264 (``V_MPEG4/ISO/AVC`` with the avcC record as CodecPrivate) and track 2
AAC (``A_AAC`` with the AudioSpecificConfig): the layout the service needs to
play the stream back over HLS and in the console (API_dataplane_PutMedia).
"""

from __future__ import annotations

from dataclasses import dataclass

from avatarstream.errors import PublishError
from avatarstream.publish.kvs.ebml import element, float64, master, open_ended, string, uint
from avatarstream.publish.packets import StreamInfo

VIDEO_TRACK = 1
AUDIO_TRACK = 2
TIMECODE_SCALE_NS = 1_000_000  # timecodes in milliseconds, the unit of PutMedia's fragment timecodes

# Element IDs (Matroska specification, RFC 9559).
EBML = 0x1A45DFA3
EBML_VERSION, EBML_READ_VERSION, EBML_MAX_ID_LENGTH, EBML_MAX_SIZE_LENGTH = 0x4286, 0x42F7, 0x42F2, 0x42F3
DOC_TYPE, DOC_TYPE_VERSION, DOC_TYPE_READ_VERSION = 0x4282, 0x4287, 0x4285
SEGMENT, INFO, TRACKS, CLUSTER = 0x18538067, 0x1549A966, 0x1654AE6B, 0x1F43B675
TIMECODE_SCALE, MUXING_APP, WRITING_APP = 0x2AD7B1, 0x4D80, 0x5741
TRACK_ENTRY, TRACK_NUMBER, TRACK_UID, TRACK_TYPE = 0xAE, 0xD7, 0x73C5, 0x83
CODEC_ID, CODEC_PRIVATE, DEFAULT_DURATION = 0x86, 0x63A2, 0x23E383
VIDEO, PIXEL_WIDTH, PIXEL_HEIGHT = 0xE0, 0xB0, 0xBA
AUDIO, SAMPLING_FREQUENCY, CHANNELS = 0xE1, 0xB5, 0x9F
TIMECODE, SIMPLE_BLOCK = 0xE7, 0xA3

_TYPE_VIDEO, _TYPE_AUDIO = 1, 2
_KEYFRAME_FLAG = 0x80


@dataclass(frozen=True)
class Block:
    """One frame inside a cluster; ``offset_ms`` is relative to the cluster timecode."""

    track: int
    offset_ms: int
    keyframe: bool
    data: bytes


def stream_header(info: StreamInfo) -> bytes:
    """EBML header, the open-ended Segment, Info and Tracks: what every PutMedia request starts with."""
    if not info.video_extradata or not info.audio_extradata:
        raise PublishError("Kinesis Video Streams needs the encoder's avcC record and AudioSpecificConfig; got none")
    ebml_header = master(
        EBML,
        uint(EBML_VERSION, 1),
        uint(EBML_READ_VERSION, 1),
        uint(EBML_MAX_ID_LENGTH, 4),
        uint(EBML_MAX_SIZE_LENGTH, 8),
        string(DOC_TYPE, "matroska"),
        uint(DOC_TYPE_VERSION, 2),  # SimpleBlock needs version 2
        uint(DOC_TYPE_READ_VERSION, 2),
    )
    segment_info = master(
        INFO,
        uint(TIMECODE_SCALE, TIMECODE_SCALE_NS),
        string(MUXING_APP, "avatarstream"),
        string(WRITING_APP, "avatarstream"),
    )
    video = master(
        TRACK_ENTRY,
        uint(TRACK_NUMBER, VIDEO_TRACK),
        uint(TRACK_UID, VIDEO_TRACK),
        uint(TRACK_TYPE, _TYPE_VIDEO),
        string(CODEC_ID, "V_MPEG4/ISO/AVC"),
        element(CODEC_PRIVATE, info.video_extradata),
        uint(DEFAULT_DURATION, round(1e9 / info.fps)),
        master(VIDEO, uint(PIXEL_WIDTH, info.width), uint(PIXEL_HEIGHT, info.height)),
    )
    audio = master(
        TRACK_ENTRY,
        uint(TRACK_NUMBER, AUDIO_TRACK),
        uint(TRACK_UID, AUDIO_TRACK),
        uint(TRACK_TYPE, _TYPE_AUDIO),
        string(CODEC_ID, "A_AAC"),
        element(CODEC_PRIVATE, info.audio_extradata),
        master(AUDIO, float64(SAMPLING_FREQUENCY, float(info.audio_rate)), uint(CHANNELS, info.audio_channels)),
    )
    return ebml_header + open_ended(SEGMENT) + segment_info + master(TRACKS, video, audio)


def cluster(timecode_ms: int, blocks: list[Block]) -> bytes:
    """One fragment: a Cluster of known size with its absolute timecode and SimpleBlocks."""
    return master(CLUSTER, uint(TIMECODE, timecode_ms), *(_simple_block(b) for b in blocks))


def _simple_block(block: Block) -> bytes:
    if not -(2**15) <= block.offset_ms < 2**15:
        raise ValueError(f"block offset {block.offset_ms} ms does not fit a SimpleBlock's 16-bit timecode")
    head = bytes([0x80 | block.track]) + block.offset_ms.to_bytes(2, "big", signed=True)
    return element(SIMPLE_BLOCK, head + bytes([_KEYFRAME_FLAG if block.keyframe else 0]) + block.data)
