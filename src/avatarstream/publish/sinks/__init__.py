"""Outputs built on FFmpeg muxers: MP4 / fragmented MP4 files, live HLS, RTMP."""

from avatarstream.publish.sinks.file import Mp4FileSink
from avatarstream.publish.sinks.hls import HlsSink
from avatarstream.publish.sinks.rtmp import RtmpSink

__all__ = ["HlsSink", "Mp4FileSink", "RtmpSink"]
