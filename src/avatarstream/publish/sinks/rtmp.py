"""RTMP output: FLV over FFmpeg's rtmp protocol, reconnected with backoff by the publisher."""

from __future__ import annotations

from urllib.parse import urlsplit

from avatarstream.errors import InputError
from avatarstream.publish.muxer import PacketMuxer
from avatarstream.publish.packets import StreamInfo
from avatarstream.publish.sinks.muxed import MuxedSink

SCHEMES = ("rtmp", "rtmps")


class RtmpSink(MuxedSink):
    """Publishes to ``rtmp://host[:port]/app/stream``; a network sink, so it may drop and reconnect."""

    lossless = False
    reconnect = True

    def __init__(self, url: str) -> None:
        check_rtmp_url(url)
        self.url = url
        super().__init__(f"rtmp:{url}")

    def _open_muxer(self, info: StreamInfo) -> PacketMuxer:
        return PacketMuxer(self.url, "flv", info)


def check_rtmp_url(url: str) -> None:
    """Reject what FFmpeg could not publish to, before the run starts."""
    parts = urlsplit(url)
    if parts.scheme not in SCHEMES or not parts.hostname or parts.path.strip("/").count("/") < 1:
        raise InputError(f"--rtmp {url!r} is not an RTMP publish URL; expected rtmp://HOST[:PORT]/APP/STREAM")
    try:
        parts.port  # noqa: B018 - reading it is the check
    except ValueError as err:
        raise InputError(f"--rtmp {url!r} has a bad port: {err}") from err
