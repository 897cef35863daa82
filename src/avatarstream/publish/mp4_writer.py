"""Encode MediaChunks straight into one playable MP4 file (H.264 + AAC), on the caller's thread.

The single-output case of the publisher without its threads: the PyAV encoder
feeding an Mp4FileSink. Timestamps derive from counts only (see
encoders/base.py), so audio and video cannot drift apart however long the
session runs.
"""

from __future__ import annotations

import os
from pathlib import Path

import av

from avatarstream.errors import PublishError
from avatarstream.lifecycle import ClosesOnExit
from avatarstream.publish.encoders.pyav import PyAvEncoder
from avatarstream.publish.media import MediaChunk
from avatarstream.publish.settings import EncoderSettings
from avatarstream.publish.sinks.file import Mp4FileSink
from avatarstream.publish.sinks.paths import unwritable


class Mp4Writer(ClosesOnExit):
    """Single-threaded MP4 encoder; a context manager that always finalizes the file."""

    def __init__(self, path: str | os.PathLike[str], settings: EncoderSettings, fragmented: bool = False) -> None:
        self.path = Path(path)
        self.settings = settings
        self._closed = False
        self._sink = Mp4FileSink(self.path, fragmented)
        self._encoder = PyAvEncoder(settings)
        try:
            self._sink.open(self._encoder.stream_info)
        except OSError as err:
            raise unwritable(self.path, err.strerror or str(err), "--out") from err
        except av.error.FFmpegError as err:
            raise PublishError(f"cannot start the MP4 output {self.path}: {err}") from err

    @property
    def frames_written(self) -> int:
        return self._encoder.frames_encoded

    def write(self, chunk: MediaChunk) -> None:
        """Encode the chunk's frames and audio; chunks must arrive in timeline order."""
        if self._closed:
            raise RuntimeError(f"Mp4Writer for {self.path} is closed")
        packets = self._encoder.encode(chunk)
        try:
            for packet in packets:
                self._sink.write(packet)
        except (OSError, av.error.FFmpegError) as err:
            raise PublishError(f"encoding {self.path} failed: {err}; check free disk space") from err

    def close(self) -> None:
        """Flush the encoder and write the MP4 index; safe to call more than once."""
        if self._closed:
            return
        self._closed = True
        try:
            try:
                for packet in self._encoder.flush():
                    self._sink.write(packet)
            finally:
                self._encoder.close()
                self._sink.close()
        except (OSError, av.error.FFmpegError) as err:
            raise PublishError(f"cannot finalize output {self.path}: {err}; check free disk space") from err
