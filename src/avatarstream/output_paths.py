"""Output locations checked before a render loads anything, and new ones removed again when the outputs fail to open.

The sinks prove their own paths when they open, but only after the model has loaded, and one sink that fails leaves
the files the ones before it created. Checking first makes a bad path an ``InputError`` (exit code 2) that costs
nothing; two outputs naming the same file would silently overwrite each other, so that is refused too.
"""

from __future__ import annotations

import contextlib
import errno
import os
import socket
from collections.abc import Iterator
from pathlib import Path

from avatarstream.errors import InputError
from avatarstream.publish.frames import check_frames_folder
from avatarstream.publish.outputs import Outputs, host_port
from avatarstream.publish.sinks.file import EXTENSIONS as MP4_EXTENSIONS


def check_outputs(outputs: Outputs, report: str | os.PathLike[str] | None, trace: str | os.PathLike[str] | None) -> None:
    """Refuse unwritable output paths, a video file not named as an MP4, one file named by two options, and a preview port that is taken."""
    seen: dict[Path, str] = {}
    for option, value in (("--out", outputs.file), ("--report", report), ("--trace", trace)):
        if value is None or str(value) == "":
            continue
        path = Path(value).resolve()
        if path in seen:
            raise InputError(f"{seen[path]} and {option} both name {value}; give each output a file of its own")
        seen[path] = option
        _check_file(Path(value), option)
        if option == "--out":
            _check_extension(value)
    if outputs.hls is not None:
        hls = Path(outputs.hls)
        if hls.resolve() in seen:
            raise InputError(f"--hls {hls} is also the {seen[hls.resolve()]} file; the HLS folder needs a path of its own")
        _check_folder(hls, "--hls")
    if outputs.frames is not None:
        frames = Path(outputs.frames)
        if frames.resolve() in seen:
            raise InputError(f"--frames {frames} is also the {seen[frames.resolve()]} file; the frames need a folder of their own")
        check_frames_folder(frames)
        _check_folder(frames, "--frames")
    if outputs.preview:
        check_port(*host_port(outputs.preview), "--preview HOST:PORT", what="the preview")


@contextlib.contextmanager
def removed_on_failure(outputs: Outputs) -> Iterator[None]:
    """Remove the (still empty) MP4 file and HLS folder that opening the outputs created, if opening fails."""
    new = [Path(p) for p in (outputs.file, outputs.hls, outputs.frames) if p is not None and str(p) not in ("", "-") and not Path(p).exists()]
    try:
        yield
    except BaseException:
        for path in new:
            with contextlib.suppress(OSError):
                if path.is_dir():
                    path.rmdir()  # only when empty
                elif path.is_file() and path.stat().st_size == 0:
                    path.unlink()
        raise


def _check_extension(file: str | os.PathLike[str]) -> None:
    """The video file is an MP4 (H.264 + AAC) whatever its name: a name that says otherwise is refused, not silently kept."""
    suffix = Path(file).suffix
    if suffix.lower() not in MP4_EXTENSIONS:
        said = f"ends with {suffix}" if suffix else "has no extension"
        raise InputError(
            f"--out {file} {said}, but the file written is an MP4 (H.264 + AAC); name it {' or '.join(MP4_EXTENSIONS)} "
            "(--hls DIR writes HLS; other containers: convert the MP4 afterwards, e.g. with ffmpeg)"
        )


def _nearest_existing(path: Path) -> Path:
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def _check_file(path: Path, option: str) -> None:
    if path.is_dir():
        raise _unwritable(path, "it is a folder; name a file", option)
    _check_parent(path.parent, path, option)


def _check_folder(path: Path, option: str) -> None:
    if path.exists() and not path.is_dir():
        raise _unwritable(path, "it is a file, not a folder", option)
    _check_parent(path, path, option)


def _check_parent(folder: Path, path: Path, option: str) -> None:
    existing = _nearest_existing(folder)
    if not existing.is_dir():
        raise _unwritable(path, f"{existing} is a file, not a folder", option)
    if not os.access(existing, os.W_OK | os.X_OK):
        raise _unwritable(path, f"{existing} is not writable", option)


def _unwritable(path: Path, reason: str, option: str) -> InputError:
    """The words the sinks use (publish/sinks/paths.py), with the kind of output the option writes."""
    kind = {"--report": "report", "--trace": "trace"}.get(option, "output")
    return InputError(f"cannot write {kind} {path}: {reason}; choose a writable path with {option}")


def check_port(host: str, port: int, option: str, *, what: str) -> None:
    """Refuse a port another program listens on now, before anything is loaded (port 0: any free one, always fine)."""
    if port == 0:
        return
    try:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # a port in TIME_WAIT is free to listen on
            probe.bind((host.strip("[]"), port))
    except OSError as err:
        reason = "the port is in use" if err.errno == errno.EADDRINUSE else (err.strerror or str(err))
        raise InputError(f"cannot serve {what} on {host}:{port}: {reason}; choose another {option}") from err
