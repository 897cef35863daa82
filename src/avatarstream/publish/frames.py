"""Lossless frame output: one PNG per frame (``000000.png``, ...), written as the frames arrive.

Frame sinks sit beside the packet sinks: they take the raw frames before the
encoder, so what they write is exactly what the pipeline made (for
post-processing, evaluation and parity checks, where H.264 would blur the
comparison). They run on the encoder thread behind its bounded queue, so they
hold one chunk at a time and memory stays constant.

The folder must be new or empty: frames of an earlier run left beside new ones
would be read as one video, so a folder with anything in it is refused.
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from pathlib import Path

import numpy as np
from PIL import Image

from avatarstream.errors import InputError, PublishError
from avatarstream.publish.media import MediaChunk
from avatarstream.publish.sink import SinkReport
from avatarstream.publish.sinks.paths import prepare_directory

#: File name of frame ``i``: six digits are enough for 11 hours at 25 fps and keep names sorted; more digits follow past that.
FRAME_NAME = "{:06d}.png"


class FrameSink(ABC):
    """An output of raw frames: ``open`` once, ``write`` chunks in order, ``close`` for the report."""

    name: str

    @abstractmethod
    def open(self) -> None: ...

    @abstractmethod
    def write(self, chunk: MediaChunk) -> None: ...

    @abstractmethod
    def close(self) -> SinkReport: ...


def check_frames_folder(path: Path, option: str = "--frames") -> None:
    """Refuse a path that is a file or a folder that already holds something (checked before anything loads)."""
    if path.exists() and not path.is_dir():
        raise InputError(f"{option} {path} is a file; give a new or empty folder for the frames")
    if path.is_dir() and any(path.iterdir()):
        raise InputError(f"{option} {path} is not empty; give a new or empty folder (frames of another run beside these would read as one video)")


class PngFrameSink(FrameSink):
    """Writes every frame as an RGB PNG named by its index in the video (the chunk's ``first_frame`` onward)."""

    lossless = True

    def __init__(self, folder: Path, option: str = "--frames") -> None:
        self.folder = Path(folder)
        self.name = f"frames:{self.folder}"
        self._option = option
        self._report = SinkReport(self.name, lossless=True)

    def open(self) -> None:
        check_frames_folder(self.folder, self._option)
        prepare_directory(self.folder, self._option)

    def write(self, chunk: MediaChunk) -> None:
        for i, frame in enumerate(chunk.frames):
            path = self.folder / FRAME_NAME.format(chunk.first_frame + i)
            try:
                Image.fromarray(np.ascontiguousarray(frame)).save(path, format="PNG", compress_level=1)  # lossless at any level; 1 is fastest
            except OSError as err:
                raise PublishError(f"cannot write frame {path}: {err.strerror or err}; free space or choose another {self._option}") from err
            self._report.packets_delivered += 1

    def close(self) -> SinkReport:
        return self._report


def frame_paths(folder: Path) -> list[Path]:
    """The frame files a ``PngFrameSink`` wrote into ``folder``, in frame order."""
    return sorted((folder / name for name in os.listdir(folder) if name.endswith(".png") and name[:-4].isdigit()), key=lambda p: int(p.stem))
