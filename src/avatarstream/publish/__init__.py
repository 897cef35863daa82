"""Encoders and sinks: frames + audio in, playable bytes out (no torch here).

The live preview (``avatarstream.publish.preview``) is imported on demand: it
loads aiortc.
"""

from avatarstream.publish.background import BackgroundEncoder, ChunkWriter
from avatarstream.publish.encoders import BACKENDS, Encoder, create_encoder
from avatarstream.publish.media import MediaChunk
from avatarstream.publish.mp4_writer import Mp4Writer
from avatarstream.publish.options import add_output_arguments, outputs_from_args
from avatarstream.publish.outputs import Outputs
from avatarstream.publish.packets import EncodedPacket, StreamInfo
from avatarstream.publish.publisher import Publisher
from avatarstream.publish.runner import Backoff
from avatarstream.publish.settings import EncoderSettings
from avatarstream.publish.sink import Sink, SinkReport
from avatarstream.publish.sinks import HlsSink, Mp4FileSink, RtmpSink

__all__ = [
    "BACKENDS",
    "BackgroundEncoder",
    "Backoff",
    "ChunkWriter",
    "EncodedPacket",
    "Encoder",
    "EncoderSettings",
    "HlsSink",
    "MediaChunk",
    "Mp4FileSink",
    "Mp4Writer",
    "Outputs",
    "Publisher",
    "RtmpSink",
    "Sink",
    "SinkReport",
    "StreamInfo",
    "add_output_arguments",
    "create_encoder",
    "outputs_from_args",
]
