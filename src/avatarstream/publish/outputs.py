"""Where a render's video goes: the outputs the CLI's options and the Python API describe, and the publisher they open."""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from avatarstream.errors import InputError
from avatarstream.publish.encoders import BACKENDS
from avatarstream.publish.frames import FrameSink, PngFrameSink
from avatarstream.publish.ice import check_ice_servers
from avatarstream.publish.publisher import Publisher
from avatarstream.publish.settings import EncoderSettings
from avatarstream.publish.sink import Sink
from avatarstream.publish.sinks import HlsSink, Mp4FileSink, RtmpSink

if TYPE_CHECKING:
    from avatarstream.publish.preview import PreviewServer  # aiortc is loaded only for a preview

DEFAULT_PREVIEW = "127.0.0.1:8765"
PREVIEW_ONLY_WINDOW = 10  # segments kept when HLS is written only for the preview page


@dataclass(frozen=True)
class Outputs:
    """Any combination of outputs, all fed by one H.264/AAC encode.

    ``file``: an MP4 (``fragmented``: fMP4 that plays while it grows).
    ``hls``: a folder for a live HLS playlist. ``rtmp``: a server URL.
    ``preview``: ``HOST:PORT`` of a local page that plays the stream while it
    is generated; with ``keep_preview`` it goes on serving the finished stream
    after the render until ``PreviewServer.stop()`` (the CLI: until Ctrl-C).
    ``kvs`` / ``kvs_stream_arn``: an Amazon Kinesis video stream. ``ice_servers``: the preview's STUN/TURN servers
    (none: host candidates only, no traffic to anyone; publish/ice.py).
    ``frames``: a new or empty folder for one lossless PNG per frame (``000000.png``, ...).
    """

    file: str | os.PathLike[str] | None = None
    fragmented: bool = False
    hls: str | Path | None = None
    rtmp: str | None = None
    preview: str | None = None
    keep_preview: bool = False
    kvs: str | None = None
    kvs_stream_arn: str | None = None
    kvs_region: str | None = None
    kvs_endpoint: str | None = None
    encoder: str = "pyav"
    ice_servers: tuple[str, ...] = ()
    frames: str | os.PathLike[str] | None = None

    def open(self, settings: EncoderSettings) -> Publisher:
        """Build the sinks (checked before any frame exists) and a publisher over them.

        Raises InputError for bad values and PublishError for outputs that cannot be written.
        """
        _check_encoder(self.encoder)
        check_ice_servers(self.ice_servers)
        preview = host_port(self.preview) if self.preview else None
        sinks: list[Sink] = []
        server: PreviewServer | None = None
        scratch: Path | None = None  # the preview's own HLS folder, when no --hls was asked for
        try:
            if self.file:
                sinks.append(Mp4FileSink(Path(self.file), fragmented=self.fragmented))
            hls_dir = Path(self.hls) if self.hls is not None else None
            if hls_dir is not None:
                sinks.append(HlsSink(hls_dir))
            if self.rtmp:
                sinks.append(RtmpSink(self.rtmp))
            if preview is not None:
                if hls_dir is None:
                    scratch = hls_dir = Path(tempfile.mkdtemp(prefix="avatarstream-preview-"))
                    sinks.append(HlsSink(hls_dir, window=PREVIEW_ONLY_WINDOW))
                from avatarstream.publish.preview import PreviewServer  # aiortc is loaded only for a preview

                server = PreviewServer(hls_dir, *preview, keep_serving=self.keep_preview, owns_hls_dir=scratch is not None, ice_servers=self.ice_servers)
                print(f"preview: {server.url}", flush=True)
                sinks.append(server)
            if self.kvs or self.kvs_stream_arn:
                sinks.append(self._kvs_sink())
            frame_sinks: list[FrameSink] = [PngFrameSink(Path(self.frames))] if self.frames is not None else []
            if not sinks and not frame_sinks:
                raise InputError(
                    "no output: give an MP4 file (--out), an HLS folder (--hls), an RTMP URL (--rtmp), a Kinesis stream (--kvs), --preview or --frames DIR"
                )
            return Publisher(settings, sinks, encoder=self.encoder, frame_sinks=frame_sinks)
        except BaseException:
            if server is not None:  # already listening; stopping also removes its scratch folder
                server.stop()
            elif scratch is not None:
                shutil.rmtree(scratch, ignore_errors=True)
            raise

    def _kvs_sink(self) -> Sink:
        from avatarstream.publish.kvs import KvsSettings, KvsSink  # loads botocore only when asked for

        settings = KvsSettings(stream_name=self.kvs, stream_arn=self.kvs_stream_arn, region=self.kvs_region, endpoint_url=self.kvs_endpoint)
        return KvsSink(settings)


def _check_encoder(name: str) -> None:
    if name not in BACKENDS:
        raise InputError(f"unknown encoder {name!r}; choose one of: {', '.join(BACKENDS)}")
    if name == "gstreamer":
        from avatarstream.publish.encoders.gstreamer import gstreamer_missing

        missing = gstreamer_missing()
        if missing:
            raise InputError(f"--encoder gstreamer: {missing}")


def host_port(value: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:PORT`` for IPv6) as a pair, or a clear error."""
    host, sep, port = value.rpartition(":")
    host = host.strip("[]") if sep else value
    if not sep or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise InputError(f"--preview {value!r} is not HOST:PORT, e.g. {DEFAULT_PREVIEW}")
    return host, int(port)
