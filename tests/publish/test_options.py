"""The command-line outputs: options parse, bad values are refused before any frame exists."""

from __future__ import annotations

import argparse
import socket
import tempfile
from pathlib import Path

import pytest

from avatarstream.errors import InputError, PublishError
from avatarstream.publish.options import add_output_arguments, outputs_from_args
from avatarstream.publish.outputs import Outputs
from avatarstream.publish.preview import PreviewServer
from avatarstream.publish.settings import EncoderSettings
from avatarstream.publish.sinks import HlsSink, Mp4FileSink, RtmpSink
from mp4_checks import decode, make_chunks

SETTINGS = EncoderSettings(width=64, height=48, fps=25, preset="ultrafast")


def open_publisher(args: argparse.Namespace, settings: EncoderSettings):
    return outputs_from_args(args).open(settings)


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path)
    add_output_arguments(parser)
    return parser.parse_args(list(argv))


def test_defaults() -> None:
    args = parse()
    assert (args.hls, args.rtmp, args.preview, args.fragmented, args.encoder, args.keep_preview) == (None, None, None, False, "pyav", True)
    assert parse("--preview").preview == "127.0.0.1:8765"
    assert parse("--preview", "0.0.0.0:9000").preview == "0.0.0.0:9000"


def test_all_outputs_in_one_run(tmp_path: Path) -> None:
    args = parse(
        "--out", str(tmp_path / "a.mp4"), "--fragmented", "--hls", str(tmp_path / "hls"), "--rtmp", "rtmp://127.0.0.1:1/live/x", "--preview", "127.0.0.1:0"
    )
    publisher = open_publisher(args, SETTINGS)
    sinks = publisher.sinks
    assert [type(s) for s in sinks] == [Mp4FileSink, HlsSink, RtmpSink, PreviewServer]
    assert sinks[0].fragmented and sinks[1].window is None and sinks[3].hls_dir == (tmp_path / "hls").resolve()
    with publisher:
        publisher.submit(make_chunks([25])[0])
    assert len(decode(tmp_path / "a.mp4").frames) == 25
    assert not publisher.reports[2].complete  # nothing listens on port 1: reported, not raised


def test_preview_alone_gets_a_bounded_hls_folder(tmp_path: Path) -> None:
    publisher = open_publisher(parse("--preview", "127.0.0.1:0", "--no-keep-preview"), SETTINGS)
    with publisher:
        sinks = publisher.sinks
        assert isinstance(sinks[0], HlsSink) and sinks[0].window == 10
        assert sinks[1].hls_dir == sinks[0].directory.resolve()
        scratch = sinks[1].hls_dir
        publisher.submit(make_chunks([25])[0])
    assert not scratch.exists()  # stopped with the render: nothing left in /tmp


def test_kept_preview_removes_its_scratch_folder_only_when_stopped() -> None:
    publisher = Outputs(preview="127.0.0.1:0", keep_preview=True).open(SETTINGS)
    with publisher:
        publisher.submit(make_chunks([25])[0])
    server = publisher.sinks[1]
    assert (server.hls_dir / "index.m3u8").is_file()  # still served after the render
    server.stop()
    assert not server.hls_dir.exists()


def test_a_preview_that_cannot_listen_leaves_no_scratch_folder(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        with pytest.raises(PublishError, match="cannot serve the preview"):
            Outputs(preview=f"127.0.0.1:{taken.getsockname()[1]}").open(SETTINGS)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("argv", "error", "message"),
    [
        ((), InputError, "no output"),
        (("--preview", "nonsense"), InputError, "--preview 'nonsense' is not HOST:PORT"),
        (("--preview", "host:70000"), InputError, "is not HOST:PORT"),
        (("--rtmp", "ftp://x/y/z"), InputError, "is not an RTMP publish URL"),
    ],
)
def test_bad_values(argv: tuple[str, ...], error: type, message: str) -> None:
    with pytest.raises(error, match=message):
        open_publisher(parse(*argv), SETTINGS)


def test_unwritable_hls_dir(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    with pytest.raises(PublishError, match="choose a writable path with --hls"):
        open_publisher(parse("--hls", str(tmp_path / "file"), "--out", str(tmp_path / "x.mp4")), SETTINGS)


def test_gstreamer_unavailable_is_input_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from avatarstream.publish.encoders import gstreamer

    monkeypatch.setattr(gstreamer, "REQUIRED_ELEMENTS", ("no_such_element_x",))
    with pytest.raises(InputError, match="--encoder gstreamer: GStreamer elements missing"):
        open_publisher(parse("--encoder", "gstreamer", "--out", str(tmp_path / "x.mp4")), SETTINGS)


def test_unknown_encoder_from_python() -> None:
    from avatarstream.publish.outputs import Outputs

    with pytest.raises(InputError, match="unknown encoder 'x264'; choose one of: pyav, gstreamer"):
        Outputs(file="x.mp4", encoder="x264").open(SETTINGS)
