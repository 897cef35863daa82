"""Encoders and sinks: frames + audio in, playable bytes out (no torch here)."""

from avatarstream.publish.background import BackgroundEncoder, ChunkWriter
from avatarstream.publish.media import MediaChunk
from avatarstream.publish.mp4_writer import Mp4Writer
from avatarstream.publish.settings import EncoderSettings

__all__ = ["BackgroundEncoder", "ChunkWriter", "EncoderSettings", "MediaChunk", "Mp4Writer"]
