"""Command-line outputs: the options any command can add, and the Outputs they describe."""

from __future__ import annotations

import argparse
from pathlib import Path

from avatarstream.publish.encoders import BACKENDS
from avatarstream.publish.outputs import DEFAULT_PREVIEW, Outputs


def add_output_arguments(parser: argparse.ArgumentParser) -> None:
    """Add --hls, --rtmp, --kvs*, --preview, --frames, --fragmented and --encoder (--out, the MP4 file, is the command's own)."""
    g = parser.add_argument_group("outputs", "where the video goes besides --out; all of them are fed by one encode")
    g.add_argument("--hls", type=Path, metavar="DIR", help="also write a live HLS playlist (fMP4 segments, 1 s each) into DIR")
    g.add_argument("--rtmp", metavar="URL", help="also publish to an RTMP server, e.g. rtmp://host/live/stream (reconnects on failure)")
    g.add_argument(
        "--preview",
        nargs="?",
        const=DEFAULT_PREVIEW,
        metavar="HOST:PORT",
        help=f"serve a live preview page (HLS or WebRTC) while rendering, and the finished stream after it until Ctrl-C; default {DEFAULT_PREVIEW}",
    )
    g.add_argument(
        "--keep-preview",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="with --preview: keep serving after the render until Ctrl-C (--no-keep-preview: stop with the render)",
    )
    add_ice_argument(g)
    g.add_argument("--kvs", metavar="STREAM", help="also stream to Amazon Kinesis Video Streams (region and credentials from the AWS chain)")
    g.add_argument("--kvs-stream-arn", metavar="ARN", help="the Kinesis video stream by ARN instead of --kvs NAME")
    g.add_argument("--kvs-region", metavar="REGION", help="AWS region of the stream (default: the AWS chain, e.g. AWS_DEFAULT_REGION)")
    g.add_argument("--kvs-endpoint", metavar="URL", help="PutMedia data endpoint to use instead of asking GetDataEndpoint")
    g.add_argument("--frames", type=Path, metavar="DIR", help="also write every frame losslessly as DIR/000000.png, 000001.png, ... (DIR new or empty)")
    g.add_argument("--fragmented", action="store_true", help="write --out as fragmented MP4: playable while it grows, flat memory")
    g.add_argument("--encoder", choices=BACKENDS, default="pyav", help="encoder backend (H.264 + AAC)")


def outputs_from_args(args: argparse.Namespace) -> Outputs:
    """The outputs the parsed options ask for; ``args.out`` is the MP4 file (None or '-' for none)."""
    out = getattr(args, "out", None)
    return Outputs(
        file=None if out is None or str(out) == "-" else out, fragmented=args.fragmented, hls=args.hls, rtmp=args.rtmp,
        preview=args.preview, keep_preview=args.keep_preview, kvs=args.kvs, kvs_stream_arn=args.kvs_stream_arn,
        kvs_region=args.kvs_region, kvs_endpoint=args.kvs_endpoint, encoder=args.encoder,
        ice_servers=tuple(args.ice_server), frames=args.frames,
    )  # fmt: skip


def add_ice_argument(group: argparse._ActionsContainer) -> None:
    """--ice-server, repeatable: the WebRTC preview's STUN/TURN servers (render, serve and fleet take it alike)."""
    group.add_argument(
        "--ice-server",
        action="append",
        default=[],
        metavar="URL",
        help="a STUN or TURN server for WebRTC viewers behind NAT (stun:HOST:PORT, USER:CREDENTIAL@turn:HOST:PORT; repeatable). "
        "Default: none, host candidates only, so viewing contacts no third party (enough on one machine or a LAN)",
    )
