"""Command-line outputs: the options any command can add, and the publisher they describe."""

from __future__ import annotations

import argparse
import tempfile
from collections.abc import Sequence
from pathlib import Path

from avatarstream.errors import InputError
from avatarstream.publish.encoders import BACKENDS
from avatarstream.publish.publisher import Publisher
from avatarstream.publish.settings import EncoderSettings
from avatarstream.publish.sink import Sink
from avatarstream.publish.sinks import HlsSink, Mp4FileSink, RtmpSink

DEFAULT_PREVIEW = "127.0.0.1:8765"
PREVIEW_ONLY_WINDOW = 10  # segments kept when HLS is written only for the preview page


def add_output_arguments(parser: argparse.ArgumentParser) -> None:
    """Add --hls, --rtmp, --kvs*, --preview, --fragmented and --encoder (--out, the MP4 file, is the command's own)."""
    parser.add_argument("--hls", type=Path, metavar="DIR", help="also write a live HLS playlist (fMP4 segments, 1 s each) into DIR")
    parser.add_argument("--rtmp", metavar="URL", help="also publish to an RTMP server, e.g. rtmp://host/live/stream (reconnects on failure)")
    parser.add_argument(
        "--preview",
        nargs="?",
        const=DEFAULT_PREVIEW,
        metavar="HOST:PORT",
        help=f"serve a live preview page (HLS or WebRTC) while rendering; default {DEFAULT_PREVIEW}",
    )
    parser.add_argument("--kvs", metavar="STREAM", help="also stream to Amazon Kinesis Video Streams (region and credentials from the AWS chain)")
    parser.add_argument("--kvs-stream-arn", metavar="ARN", help="the Kinesis video stream by ARN instead of --kvs NAME")
    parser.add_argument("--kvs-region", metavar="REGION", help="AWS region of the stream (default: the AWS chain, e.g. AWS_DEFAULT_REGION)")
    parser.add_argument("--kvs-endpoint", metavar="URL", help="PutMedia data endpoint to use instead of asking GetDataEndpoint")
    parser.add_argument("--fragmented", action="store_true", help="write --out as fragmented MP4: playable while it grows, flat memory")
    parser.add_argument("--encoder", choices=BACKENDS, default="pyav", help="encoder backend (H.264 + AAC)")


def open_publisher(args: argparse.Namespace, settings: EncoderSettings, extra_sinks: Sequence[Sink] = ()) -> Publisher:
    """Build the sinks the options ask for (checked before any frame exists) and a publisher over them.

    ``args.out`` is the MP4 file (None for none). ``extra_sinks`` are outputs
    built elsewhere. Raises InputError for bad
    option values and PublishError for outputs that cannot be written.
    """
    _check_encoder(args.encoder)
    preview = _host_port(args.preview) if args.preview else None
    sinks: list[Sink] = []
    server: Sink | None = None
    try:
        if getattr(args, "out", None):
            sinks.append(Mp4FileSink(args.out, fragmented=args.fragmented))
        hls_dir = args.hls
        if hls_dir is not None:
            sinks.append(HlsSink(hls_dir))
        if args.rtmp:
            sinks.append(RtmpSink(args.rtmp))
        if preview is not None:
            if hls_dir is None:
                hls_dir = Path(tempfile.mkdtemp(prefix="avatarstream-preview-"))
                sinks.append(HlsSink(hls_dir, window=PREVIEW_ONLY_WINDOW))
            from avatarstream.publish.preview import PreviewServer  # aiortc is loaded only for a preview

            server = PreviewServer(hls_dir, *preview)
            print(f"preview: {server.url}", flush=True)
            sinks.append(server)
        if args.kvs or args.kvs_stream_arn:
            sinks.append(_kvs_sink(args))
        sinks += extra_sinks
        if not sinks:
            raise InputError("no output: give --out FILE.mp4, --hls DIR, --rtmp URL, --kvs STREAM or --preview")
        return Publisher(settings, sinks, encoder=args.encoder)
    except BaseException:
        if server is not None:  # already listening
            server.close()
        raise


def _kvs_sink(args: argparse.Namespace) -> Sink:
    from avatarstream.publish.kvs import KvsSettings, KvsSink  # loads botocore only when asked for

    settings = KvsSettings(stream_name=args.kvs, stream_arn=args.kvs_stream_arn, region=args.kvs_region, endpoint_url=args.kvs_endpoint)
    return KvsSink(settings)


def _check_encoder(name: str) -> None:
    if name == "gstreamer":
        from avatarstream.publish.encoders.gstreamer import gstreamer_missing

        missing = gstreamer_missing()
        if missing:
            raise InputError(f"--encoder gstreamer: {missing}")


def _host_port(value: str) -> tuple[str, int]:
    host, sep, port = value.rpartition(":")
    host = host.strip("[]") if sep else value
    if not sep or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise InputError(f"--preview {value!r} is not HOST:PORT, e.g. {DEFAULT_PREVIEW}")
    return host, int(port)
