"""Client uploads -> validated inputs. Bytes land only under names the server chose, in the session's folder;
error messages never show server paths."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import anyio
import numpy as np
from fastapi import UploadFile
from starlette.requests import Request

from avatarstream.errors import InputError
from avatarstream.serve.audio_input import ClipSegment
from avatarstream.serve.limits import too_large_message
from avatarstream.serve.problems import NotFound, TooLarge, UnsupportedType
from avatarstream.sources.audio_file import AudioFileSource, open_audio_file

#: Identities a client may name instead of uploading a reference image: the model's default avatar (the one ``render`` uses
#: without a reference; a family's request options, ``model_options``, may choose another).
IDENTITIES = ("default",)
#: The family's reference maker for one session: image path, or None for its default -> uint8 RGB.
ReferenceMaker = Callable[[Path | None], np.ndarray]
ENDED = "the session has ended; it takes no more uploads"
AUDIO_TYPES = ("audio/wav", "audio/mpeg", "audio/flac", "audio/ogg")  # what the schema names; any audio/* is taken


def check_audio_type(content_type: str | None) -> None:
    """Audio uploads say they are audio (or opaque bytes); anything else is refused before decoding."""
    base = (content_type or "").split(";")[0].strip().lower()
    if not (base.startswith("audio/") or base in ("application/octet-stream", "video/ogg")):
        raise UnsupportedType(
            f"expected an audio file (Content-Type {', '.join(AUDIO_TYPES[:-1])} or {AUDIO_TYPES[-1]}), got {content_type or 'no Content-Type'}"
        )


def check_image_type(content_type: str | None) -> None:
    base = (content_type or "").split(";")[0].strip().lower()
    if not (base.startswith("image/") or base == "application/octet-stream"):
        raise UnsupportedType(f"expected a reference image (Content-Type image/png or image/jpeg), got {content_type or 'no Content-Type'}")


@contextlib.contextmanager
def into_session(folder: Path) -> Iterator[None]:
    """Writing into a session's folder: the folder vanishing (the session was closed while the bytes arrived) is a 404."""
    try:
        yield
    except FileNotFoundError as err:
        if folder.is_dir():
            raise
        raise NotFound(ENDED) from err


async def save_body(request: Request, folder: Path, max_bytes: int) -> Path:
    """Stream a raw request body into a new file in ``folder``."""
    path = new_upload_path(folder)
    try:
        with into_session(folder):
            await _stream_body(request, path, max_bytes)
    except BaseException:
        path.unlink(missing_ok=True)
        raise
    return path


async def _stream_body(request: Request, path: Path, max_bytes: int) -> None:
    size = 0
    async with await anyio.open_file(path, "wb") as out:  # the event loop keeps serving while the disk writes
        async for part in request.stream():
            size += len(part)
            if size > max_bytes:
                raise TooLarge(too_large_message(max_bytes))
            await out.write(part)


def save_upload(upload: UploadFile, folder: Path, max_bytes: int) -> Path:
    """Copy a spooled multipart file into a new file in ``folder`` (blocking)."""
    path = new_upload_path(folder)
    size = 0
    upload.file.seek(0)
    with into_session(folder), open(path, "wb") as out:
        while part := upload.file.read(1 << 20):
            size += len(part)
            if size > max_bytes:
                path.unlink(missing_ok=True)
                raise TooLarge(too_large_message(max_bytes))
            out.write(part)
    return path


def reference_image(identity: str, upload: UploadFile | None, folder: Path, make: ReferenceMaker, max_bytes: int) -> np.ndarray:
    """The uploaded reference or the named identity, fitted by the family (blocking). The session's request options reach
    ``make``: an option that picks an identity as well as an upload is the family's to refuse."""
    if upload is None:
        if identity not in IDENTITIES:
            raise InputError(f"unknown identity {identity!r}; use one of: {', '.join(IDENTITIES)}, or upload a reference image")
        return make(None)
    check_image_type(upload.content_type)
    path = save_upload(upload, folder, max_bytes)
    try:
        return make(path)
    except InputError as err:
        raise InputError(str(err).replace(str(path), "the uploaded reference")) from err
    finally:
        path.unlink(missing_ok=True)


def open_upload_audio(path: Path) -> AudioFileSource:
    """Open a stored upload as audio; the message names 'the uploaded audio', never the server path."""
    try:
        return open_audio_file(path)
    except InputError as err:
        if not path.parent.is_dir():  # the session was closed, and its folder removed, as the upload arrived
            raise NotFound(ENDED) from err
        path.unlink(missing_ok=True)
        raise InputError(str(err).replace(str(path), "the uploaded audio")) from err


def store_clip(data: bytes, folder: Path) -> ClipSegment:
    """Client bytes (one encoded clip) stored and validated as audio (blocking)."""
    path = new_upload_path(folder)
    with into_session(folder):
        path.write_bytes(data)
    return ClipSegment(open_upload_audio(path), path)


def new_upload_path(folder: Path) -> Path:
    """A fresh file in ``folder`` whose name the server chose (never a client string)."""
    with into_session(folder):
        fd, name = tempfile.mkstemp(prefix="upload-", dir=folder)
    os.close(fd)
    return Path(name)
