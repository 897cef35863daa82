"""The MKV the sink writes, read back by the independent reader the fake service uses."""

from __future__ import annotations

from fractions import Fraction

import pytest
from kvs_ebml_reader import SEGMENT, TRACKS, children, cluster_frames, tracks

from avatarstream.publish.kvs.ebml import UNKNOWN_SIZE, uint, vint
from avatarstream.publish.kvs.fragmenter import Fragment, Fragmenter
from avatarstream.publish.kvs.mkv import stream_header
from avatarstream.publish.packets import EncodedPacket, StreamInfo

INFO = StreamInfo(64, 48, 25, b"\x01avcC-record", 48000, 2, b"\x11\x90")
ORIGIN_MS = 1_700_000_000_000


@pytest.mark.parametrize(
    ("value", "encoded"),
    [(0, "80"), (126, "fe"), (127, "407f"), (2**14 - 2, "7ffe"), (2**14 - 1, "203fff")],
)
def test_vint_is_shortest_and_skips_the_reserved_all_ones(value: int, encoded: str) -> None:
    assert vint(value).hex() == encoded


def test_uint_uses_the_fewest_bytes() -> None:
    assert uint(0xE7, 0).hex() == "e78100"
    assert uint(0xE7, 1_700_000_000_000).hex() == "e786018bcfe56800"


def test_header_has_both_tracks_and_an_open_segment() -> None:
    header = stream_header(INFO)
    segment_at = header.index(SEGMENT.to_bytes(4, "big"))
    assert header[segment_at + 4 : segment_at + 12] == UNKNOWN_SIZE
    body = header[segment_at + 12 :]
    elements = dict(children(body))
    assert tracks(elements[TRACKS]) == {
        1: ("V_MPEG4/ISO/AVC", INFO.video_extradata),
        2: ("A_AAC", INFO.audio_extradata),
    }


def video(frame: int, keyframe: bool) -> EncodedPacket:
    return EncodedPacket("video", b"v%d" % frame, frame, frame, Fraction(1, 25), keyframe)


def audio(index: int) -> EncodedPacket:
    return EncodedPacket("audio", b"a%d" % index, index * 1024 - 1024, index * 1024 - 1024, Fraction(1, 48000), True)


def interleaved(frames: int, gop: int, audio_lead_chunks: int) -> list[EncodedPacket]:
    """Packets in chunks of 10 frames; audio ``audio_lead_chunks`` chunks ahead of video (negative: behind)."""
    chunks_v = [[video(f, f % gop == 0) for f in range(c, min(c + 10, frames))] for c in range(0, frames, 10)]
    total_audio = frames * 48000 // 25 // 1024 + 1
    per_chunk = -(-total_audio // len(chunks_v))
    chunks_a = [[audio(i) for i in range(c, min(c + per_chunk, total_audio))] for c in range(0, total_audio, per_chunk)]
    out: list[EncodedPacket] = []
    for i in range(len(chunks_v) + abs(audio_lead_chunks)):
        a = i if audio_lead_chunks >= 0 else i + audio_lead_chunks
        v = i - audio_lead_chunks if audio_lead_chunks >= 0 else i
        out += chunks_a[a] if 0 <= a < len(chunks_a) else []
        out += chunks_v[v] if 0 <= v < len(chunks_v) else []
    return out


def cut(packets: list[EncodedPacket]) -> tuple[list[Fragment], int]:
    fragmenter = Fragmenter(clock_ms=lambda: ORIGIN_MS)
    fragments = [f for p in packets for f in fragmenter.add(p)]
    return fragments + fragmenter.flush(), fragmenter.dropped


@pytest.mark.parametrize("audio_lead_chunks", [-2, -1, 0, 1, 2])
def test_fragments_follow_the_rules_however_audio_and_video_interleave(audio_lead_chunks: int) -> None:
    packets = interleaved(frames=60, gop=20, audio_lead_chunks=audio_lead_chunks)
    fragments, dropped = cut(packets)
    assert dropped == 0
    assert sum(f.packets for f in fragments) == len(packets)
    assert [f.timecode_ms - fragments[0].timecode_ms for f in fragments] == [0, 800, 1600]
    previous_last = None
    for fragment in fragments:
        ((_, payload),) = children(fragment.data)
        timecode, frames = cluster_frames(payload)
        assert timecode == fragment.timecode_ms
        assert frames[0].track == 1 and frames[0].keyframe
        assert {f.track for f in frames} == {1, 2}
        times = [fragment.timecode_ms + f.offset_ms for f in frames]
        assert previous_last is None or min(times) > previous_last
        previous_last = max(times)


def test_a_stream_joined_midway_is_stamped_with_the_wall_clock() -> None:
    fragments, _ = cut([video(250, True), audio(500), video(251, False), video(275, True), audio(600)])
    assert fragments[0].timecode_ms == ORIGIN_MS  # not ORIGIN_MS + 10 s
    assert fragments[1].timecode_ms == ORIGIN_MS + 1000


def test_video_before_the_first_keyframe_is_dropped_and_counted() -> None:
    packets = [video(0, False), video(1, False), audio(1), video(2, True), audio(2), audio(3)]
    fragments, dropped = cut(packets)
    assert dropped == 2
    assert [f.packets for f in fragments] == [4]
