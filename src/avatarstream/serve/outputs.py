"""A session's requested outputs -> publish sinks, all files inside the session's own folder."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from avatarstream.errors import InputError
from avatarstream.publish.frames import FrameSink, PngFrameSink
from avatarstream.publish.media import MediaChunk
from avatarstream.publish.sink import Sink, SinkReport
from avatarstream.publish.sinks import HlsSink, Mp4FileSink, RtmpSink
from avatarstream.serve.schemas import Outputs

if TYPE_CHECKING:
    from avatarstream.publish.preview.webrtc_sink import WebRtcSink

HLS_WINDOW = 10  # segments kept: an endless session needs a bounded folder
VIDEO_FILE = "video.mp4"
FRAMES_FOLDER = "frames"


@dataclass
class SessionOutputs:
    """The sinks, plus what the app serves from them."""

    sinks: list[Sink] = field(default_factory=list)
    hls_dir: Path | None = None
    video: Path | None = None
    webrtc: WebRtcSink | None = None
    frame_sinks: list[FrameSink] = field(default_factory=list)


def build_outputs(spec: Outputs, folder: Path, *, live: bool, ice_servers: tuple[str, ...] = ()) -> SessionOutputs:
    """Sinks for ``spec``; a batch job always writes its MP4; ``ice_servers``: the server's, for WebRTC. Raises InputError
    for unusable values."""
    out = SessionOutputs()
    if spec.frames:
        if live:
            raise InputError("frames are for batch jobs: a live session has no end, and its PNG frames would fill the disk; use hls, webrtc or file")
        out.frame_sinks.append(PngFrameSink(folder / FRAMES_FOLDER, option="outputs.frames"))
    try:
        if spec.file or not live:
            out.video = folder / VIDEO_FILE
            out.sinks.append(Mp4FileSink(out.video, fragmented=live))
        if spec.hls:
            out.hls_dir = folder / "hls"
            out.sinks.append(HlsSink(out.hls_dir, window=HLS_WINDOW if live else None))
        if spec.webrtc:
            from avatarstream.publish.preview.webrtc_sink import WebRtcSink  # loads aiortc only when asked for

            out.webrtc = WebRtcSink(ice_servers=ice_servers)
            out.sinks.append(out.webrtc)
        if spec.rtmp:
            out.sinks.append(RtmpSink(spec.rtmp))
        if spec.kvs is not None:
            out.sinks.append(_kvs_sink(spec))
    except BaseException:
        if out.webrtc is not None:
            out.webrtc.close()
        raise
    if not out.sinks and not out.frame_sinks and not spec.frames_ws:
        raise InputError("no output: ask for at least one of hls, webrtc, file, rtmp, kvs, frames, frames_ws")
    return out


class FramesOnly:
    """The publisher of a session whose only output is its frames WebSocket: there is nothing to encode."""

    sinks: tuple[Sink, ...] = ()

    def submit(self, chunk: MediaChunk) -> None:
        pass

    def close(self) -> list[SinkReport]:
        return []

    def failed_outputs(self) -> list[str]:
        return []


def _kvs_sink(spec: Outputs) -> Sink:
    from avatarstream.publish.kvs import KvsSettings, KvsSink  # loads botocore only when asked for

    assert spec.kvs is not None
    settings = KvsSettings(stream_name=spec.kvs.stream_name, stream_arn=spec.kvs.stream_arn, region=spec.kvs.region, delivered_on=spec.kvs.delivered_on)
    return KvsSink(settings)
