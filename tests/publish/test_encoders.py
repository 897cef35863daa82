"""Each backend encodes a known stream; an independent decoder sees the same frames and timeline."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest

from avatarstream.errors import PublishError
from avatarstream.publish.encoders import BACKENDS, create_encoder
from avatarstream.publish.muxer import PacketMuxer
from avatarstream.publish.settings import EncoderSettings
from mp4_checks import colour, decode, make_chunks
from publish_needs import require_gstreamer
from stream_checks import encode_all

SETTINGS = EncoderSettings(width=64, height=48, fps=25)
SIZES = [7, 13, 1, 25, 14]  # 60 frames = 2.4 s in uneven chunks


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    if request.param == "gstreamer":
        require_gstreamer()
    return request.param


def write_mp4(path: Path, backend: str, settings: EncoderSettings = SETTINGS, sizes: list[int] = SIZES) -> None:
    info, packets = encode_all(backend, settings, make_chunks(sizes, settings.width, settings.height, settings.fps))
    muxer = PacketMuxer(str(path), "mp4", info)
    for packet in packets:
        muxer.write(packet)
    muxer.close()


def test_known_stream_decodes_back(tmp_path: Path, backend: str) -> None:
    path = tmp_path / f"{backend}.mp4"
    write_mp4(path, backend)
    out = decode(path)
    assert len(out.frames) == 60
    assert (out.width, out.height) == (64, 48)
    assert (out.video_codec, out.audio_codec) == ("h264", "aac")
    assert (out.audio_rate, out.audio_channels) == (48000, 2)
    frame_s = 1 / 25
    assert out.video_duration_s == pytest.approx(60 * frame_s)
    assert abs(out.audio_duration_s - 60 * frame_s) <= frame_s
    assert abs(out.audio.shape[1] / 48000 - 60 * frame_s) <= frame_s
    errors = [np.abs(frame.astype(int) - colour(i)).mean() for i, frame in enumerate(out.frames)]
    assert max(errors) < 6, f"colour error per frame: {errors}"
    assert out.keyframes == [0, 25, 50]  # one per second, no scene-cut extras
    assert not out.has_b_frames and out.decode_order_is_display_order


def test_backends_share_one_timeline() -> None:
    require_gstreamer()
    chunks = make_chunks(SIZES)
    timelines = []
    for backend in BACKENDS:
        info, packets = encode_all(backend, SETTINGS, chunks)
        assert (info.width, info.height, info.fps, info.audio_rate, info.audio_channels) == (64, 48, 25, 48000, 2)
        assert info.video_extradata[0] == 1  # an avcC record, not Annex B
        timelines.append(
            (
                [(p.pts, p.dts, p.keyframe) for p in packets if p.kind == "video"],
                [p.pts for p in packets if p.kind == "audio"],
            )
        )
    assert timelines[0] == timelines[1]
    video, audio = timelines[0]
    assert [pts for pts, _, _ in video] == list(range(60))
    assert audio[0] == -1024 and audio == list(range(-1024, audio[-1] + 1, 1024))  # AAC priming, then the sample clock


def test_packets_are_avcc_and_interleaved(backend: str) -> None:
    _, packets = encode_all(backend, SETTINGS, make_chunks([25, 25]))
    for packet in (p for p in packets if p.kind == "video"):
        offset = 0
        while offset < len(packet.data):  # walks length prefixes exactly to the end
            offset += 4 + int.from_bytes(packet.data[offset : offset + 4], "big")
        assert offset == len(packet.data)
    times = [p.dts * p.time_base for p in packets]
    late = [(a, b) for a, b in itertools.pairwise(times) if b < a - 1]  # within a batch, never out of time order by > 1 s
    assert not late


def test_timestamps_do_not_drift_over_a_long_stream(backend: str) -> None:
    """Five minutes at 1 fps (8 kHz mono to keep it quick): both clocks end within one frame of each other."""
    settings = EncoderSettings(width=16, height=16, fps=1, audio_rate=8000, audio_channels=1, preset="ultrafast")
    _, packets = encode_all(backend, settings, make_chunks([60] * 5, 16, 16, fps=1, rate=8000, channels=1))
    video_end = max(p.pts for p in packets if p.kind == "video") + 1
    audio = [p for p in packets if p.kind == "audio"]
    audio_end = (audio[-1].pts + 1024) / 8000
    assert video_end == 300
    assert abs(audio_end - video_end) <= 1


def test_wrong_frames_and_gaps_are_refused(backend: str) -> None:
    with create_encoder(backend, SETTINGS) as encoder:
        with pytest.raises(ValueError, match=r"frames must be uint8 RGB \[T, 48, 64, 3\]"):
            encoder.encode(make_chunks([3], width=32)[0])
        first, _, third = make_chunks([5, 5, 5])
        encoder.encode(first)
        with pytest.raises(ValueError, match="chunk starts at frame 10 but 5 frames were written"):
            encoder.encode(third)


def test_unknown_backend() -> None:
    with pytest.raises(ValueError, match="unknown encoder 'nvenc'"):
        create_encoder("nvenc", SETTINGS)


def test_gstreamer_missing_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    from avatarstream.publish.encoders import gstreamer

    monkeypatch.setattr(gstreamer, "REQUIRED_ELEMENTS", ("no_such_element_x",))
    with pytest.raises(PublishError, match="GStreamer elements missing: no_such_element_x; run scripts/system-deps.sh"):
        create_encoder("gstreamer", SETTINGS)
