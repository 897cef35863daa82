"""File and HLS sinks: what they write is read back by an independent decoder, even mid-write."""

from __future__ import annotations

import re
import threading
from pathlib import Path

import av
import pytest

from avatarstream.errors import PublishError
from avatarstream.publish.settings import EncoderSettings
from avatarstream.publish.sink import Sink
from avatarstream.publish.sinks import HlsSink, Mp4FileSink
from mp4_checks import make_chunks
from stream_checks import encode_all, inspect

SETTINGS = EncoderSettings(width=64, height=48, fps=25)
FRAME_S = 1 / 25


@pytest.fixture(scope="module")
def stream() -> tuple:
    return encode_all("pyav", SETTINGS, make_chunks([25, 25, 10]))  # 60 frames, 2.4 s


def feed(sink: Sink, stream: tuple, upto: int | None = None) -> None:
    info, packets = stream
    sink.open(info)
    for packet in packets[:upto]:
        sink.write(packet)


@pytest.mark.parametrize("fragmented", [False, True])
def test_mp4_file_reads_back(tmp_path: Path, stream: tuple, fragmented: bool) -> None:
    sink = Mp4FileSink(tmp_path / "out.mp4", fragmented=fragmented)
    feed(sink, stream)
    report = sink.close()
    assert report.packets_delivered == len(stream[1]) and report.complete
    seen = inspect(tmp_path / "out.mp4")
    assert (seen.frames, seen.width, seen.height) == (60, 64, 48)
    assert seen.video_s == pytest.approx(2.4)
    assert abs(seen.audio_s - seen.video_s) <= FRAME_S
    assert (b"moof" in (tmp_path / "out.mp4").read_bytes()) is fragmented


def test_fragmented_mp4_plays_while_it_grows(tmp_path: Path, stream: tuple) -> None:
    sink = Mp4FileSink(tmp_path / "live.mp4", fragmented=True)
    upto = next(i for i, p in enumerate(stream[1]) if p.kind == "video" and p.pts == 55)
    feed(sink, stream, upto=upto)  # past the keyframe at 2 s, which closes the second fragment
    growing = inspect(tmp_path / "live.mp4")
    assert growing.frames == 50
    assert abs(growing.audio_s - growing.video_s) <= FRAME_S
    for packet in stream[1][upto:]:
        sink.write(packet)
    sink.close()
    assert inspect(tmp_path / "live.mp4").frames == 60


def test_plain_mp4_needs_close_fragmented_does_not(tmp_path: Path, stream: tuple) -> None:
    """Why the fragmented flag exists: an unfinished plain MP4 has no index to play from."""
    plain = Mp4FileSink(tmp_path / "plain.mp4")
    feed(plain, stream)
    with pytest.raises(av.error.InvalidDataError):
        inspect(tmp_path / "plain.mp4")
    plain.close()


def test_hls_segments_and_playlist(tmp_path: Path, stream: tuple) -> None:
    sink = HlsSink(tmp_path / "hls")
    playlists: list[str] = []
    stop = threading.Event()

    def watch() -> None:  # a player polling the playlist must never see half of one
        while not stop.is_set():
            if sink.playlist.exists():
                playlists.append(sink.playlist.read_text())

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        feed(sink, stream)
        sink.close()
    finally:
        stop.set()
        watcher.join()
    final = sink.playlist.read_text()
    assert "#EXT-X-PLAYLIST-TYPE:EVENT" in final and final.rstrip().endswith("#EXT-X-ENDLIST")
    assert '#EXT-X-MAP:URI="init.mp4"' in final and "#EXT-X-TARGETDURATION:1" in final
    durations = [float(d) for d in re.findall(r"#EXTINF:([\d.]+),", final)]
    assert durations == pytest.approx([1.0, 1.0, 0.4])  # one GOP per segment
    for text in playlists:
        assert text.startswith("#EXTM3U\n") and text.endswith("\n"), f"torn playlist: {text!r}"
        for name in re.findall(r"^(seg\d+\.m4s)$", text, re.MULTILINE):
            assert (tmp_path / "hls" / name).stat().st_size > 0
    seen = inspect(sink.playlist)
    assert seen.frames == 60
    assert abs(seen.audio_s - seen.video_s) <= FRAME_S


def test_hls_sliding_window_deletes_old_segments(tmp_path: Path) -> None:
    stream = encode_all("pyav", SETTINGS, make_chunks([25] * 8))
    sink = HlsSink(tmp_path / "hls", window=3)
    feed(sink, stream)
    sink.close()
    playlist = sink.playlist.read_text()
    assert len(re.findall(r"#EXTINF", playlist)) == 3
    assert "#EXT-X-MEDIA-SEQUENCE:5" in playlist
    assert len(list((tmp_path / "hls").glob("seg*.m4s"))) <= 4  # the window, plus one kept for late readers


def test_hls_window_too_small() -> None:
    with pytest.raises(ValueError, match="at least 3 segments"):
        HlsSink("unused", window=2)


def test_unwritable_outputs_are_clear(tmp_path: Path) -> None:
    (tmp_path / "taken").write_text("")
    with pytest.raises(PublishError, match=r"cannot write output .*taken.*choose a writable path with --hls"):
        HlsSink(tmp_path / "taken")
    with pytest.raises(PublishError, match=r"a part of its folder path is a file.*--out"):
        Mp4FileSink(tmp_path / "taken" / "x.mp4")
