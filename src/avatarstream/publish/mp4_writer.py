"""Encode MediaChunks into a playable MP4 file (H.264 + AAC).

Timestamps derive from counts only (video: frame index at 1/fps, audio: samples
sent so far at 1/audio_rate), so audio and video cannot drift apart however long
the session runs. The moov index is written by ``close()``; no ``+faststart``,
because that rewrites the whole file at close, a second pass that can fail
(disk full, second Ctrl-C) after the data is already written and that costs a
full re-read of hour-long outputs.
"""

from __future__ import annotations

import os
from fractions import Fraction
from pathlib import Path
from types import TracebackType

import av
import numpy as np

from avatarstream.errors import PublishError
from avatarstream.publish.media import MediaChunk
from avatarstream.publish.settings import EncoderSettings


class Mp4Writer:
    """Single-threaded MP4 encoder; a context manager that always finalizes the file."""

    def __init__(self, path: str | os.PathLike[str], settings: EncoderSettings) -> None:
        self.path = Path(path)
        self.settings = settings
        self.frames_written = 0
        self._samples_encoded = 0
        self._closed = False
        _prepare_output(self.path)
        # av.open only parses the format; the file is opened by start_encoding().
        self._container = av.open(str(self.path), "w", format="mp4")
        try:
            self._video = self._container.add_stream("libx264", rate=settings.fps, options=settings.x264_options())
            self._video.width = settings.width
            self._video.height = settings.height
            self._video.pix_fmt = "yuv420p"
            layout = "stereo" if settings.audio_channels == 2 else "mono"
            self._audio = self._container.add_stream("aac", rate=settings.audio_rate, layout=layout)
            self._container.start_encoding()
        except OSError as err:
            self._container.close()
            raise _unwritable(self.path, err.strerror or str(err)) from err
        except av.error.FFmpegError as err:
            self._container.close()
            raise PublishError(f"cannot start the H.264/AAC encoder for {self.path}: {err}") from err
        self._audio_time_base = Fraction(1, settings.audio_rate)
        self._aac_frame_size = self._audio.codec_context.frame_size
        self._fifo = av.AudioFifo()

    def write(self, chunk: MediaChunk) -> None:
        """Encode the chunk's frames and audio; chunks must arrive in timeline order."""
        if self._closed:
            raise RuntimeError(f"Mp4Writer for {self.path} is closed")
        self._check_frames(chunk)
        if chunk.first_frame != self.frames_written:
            raise ValueError(
                f"chunk starts at frame {chunk.first_frame} but {self.frames_written} frames were written; "
                "chunks must be consecutive"
            )
        audio = _match_channels(chunk.audio, self.settings.audio_channels)
        try:
            for image in chunk.frames:
                frame = av.VideoFrame.from_ndarray(np.ascontiguousarray(image), format="rgb24")
                frame.pts = self.frames_written
                self._container.mux(self._video.encode(frame))
                self.frames_written += 1
            if audio.shape[1]:
                self._fifo.write(self._audio_frame(audio))
            for frame in self._fifo.read_many(self._aac_frame_size):
                self._encode_audio(frame)
        except (OSError, av.error.FFmpegError) as err:
            raise PublishError(f"encoding {self.path} failed: {err}; check free disk space") from err

    def close(self) -> None:
        """Flush both encoders and write the MP4 index; safe to call more than once."""
        if self._closed:
            return
        self._closed = True
        try:
            try:
                rest = self._fifo.read()  # the last, partial AAC frame
                if rest is not None:
                    self._encode_audio(rest)
                self._container.mux(self._video.encode(None))
                self._container.mux(self._audio.encode(None))
            finally:
                self._container.close()
        except (OSError, av.error.FFmpegError) as err:
            raise PublishError(f"cannot finalize output {self.path}: {err}; check free disk space") from err

    def __enter__(self) -> Mp4Writer:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _check_frames(self, chunk: MediaChunk) -> None:
        expected = (self.settings.height, self.settings.width, 3)
        frames = chunk.frames
        if frames.dtype != np.uint8 or frames.ndim != 4 or frames.shape[1:] != expected:
            raise ValueError(
                f"frames must be uint8 RGB [T, {expected[0]}, {expected[1]}, 3] to match the encoder "
                f"settings, got {frames.dtype} {list(frames.shape)}"
            )

    def _audio_frame(self, audio: np.ndarray) -> av.AudioFrame:
        frame = av.AudioFrame.from_ndarray(audio, format="fltp", layout=self._audio.layout.name)
        frame.sample_rate = self.settings.audio_rate
        return frame

    def _encode_audio(self, frame: av.AudioFrame) -> None:
        frame.pts = self._samples_encoded
        frame.time_base = self._audio_time_base
        self._container.mux(self._audio.encode(frame))
        self._samples_encoded += frame.samples


def _match_channels(audio: np.ndarray, channels: int) -> np.ndarray:
    """Return contiguous float32 [channels, n]: mono is duplicated, multichannel mixed down to mono."""
    audio = np.asarray(audio, dtype=np.float32)
    if audio.ndim != 2:
        raise ValueError(f"audio must be float32 [channels, samples], got shape {list(audio.shape)}")
    have = audio.shape[0]
    if have == channels:
        return np.ascontiguousarray(audio)
    if channels == 1:
        return np.ascontiguousarray(audio.mean(axis=0, keepdims=True))
    if have == 1:
        return np.repeat(audio, channels, axis=0)
    raise ValueError(f"audio has {have} channels; the encoder takes 1 or {channels}")


def _prepare_output(path: Path) -> None:
    """Create the parent folder and prove the file can be written, before any encoding starts."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "wb"):
            pass
    except (FileExistsError, NotADirectoryError) as err:
        raise _unwritable(path, "a part of its folder path is a file, not a folder") from err
    except OSError as err:
        raise _unwritable(path, err.strerror or str(err)) from err


def _unwritable(path: Path, reason: str) -> PublishError:
    return PublishError(f"cannot write output {path}: {reason}; choose a writable path with --out")
