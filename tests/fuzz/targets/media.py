"""Media a user hands over: an audio clip (a file for ``render``, an upload or a WebSocket clip for the server: the same
decoder) and a reference image (any format Pillow opens)."""

from __future__ import annotations

import io
import math
import struct
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import av
import numpy as np
from PIL import Image

from avatarstream.errors import InputError
from avatarstream.serve.uploads import store_clip
from avatarstream.sources.reference import load_reference_image
from fuzz.contract import Bounds, Breach, Run
from fuzz.target import Target

#: How much a clip is read per call, as a live session takes it (10 ms at 48 kHz).
READ = 480
#: (container, codec, sample format, layout) of the audio seeds: every format the server names, and WAV's variants.
AUDIO_FORMATS = [
    ("wav", "pcm_s16le", "s16", "mono"),
    ("wav", "pcm_f32le", "flt", "stereo"),
    ("wav", "pcm_u8", "u8", "mono"),
    ("flac", "flac", "s16", "mono"),
    ("mp3", "libmp3lame", "s16p", "mono"),
    ("ogg", "flac", "s16", "stereo"),
    ("ogg", "libopus", "s16", "mono"),
]
AUDIO_WORDS = ("RIFF", "WAVE", "fmt ", "data", "LIST", "fLaC", "OggS", "ID3", "\xff\xfb", "OpusHead", "\x01vorbis", "\x10\x00\x00\x00", "\x80\xbb\x00\x00")
IMAGE_WORDS = (
    "\x89PNG\r\n\x1a\n",
    "IHDR",
    "IDAT",
    "IEND",
    "PLTE",
    "tRNS",
    "iCCP",
    "zTXt",
    "\xff\xd8\xff",
    "\xff\xc0",
    "GIF89a",
    "BM",
    "II*\x00",
    "MM\x00*",
    "RIFF",
    "WEBP",
)


def _clip(container: str, codec: str, fmt: str, layout: str, seconds: float = 0.05) -> bytes:
    rate = 48000 if codec == "libopus" else 16000
    t = np.arange(round(seconds * rate)) / rate
    wave = 0.5 * np.sin(2 * math.pi * 220 * t)
    channels = 2 if layout == "stereo" else 1
    buffer = io.BytesIO()
    with av.open(buffer, "w", format=container) as out:
        stream = out.add_stream(codec, rate=rate, layout=layout)
        frame = av.AudioFrame.from_ndarray(np.tile(wave, (channels, 1)).astype(np.float32), format="fltp", layout=layout)
        frame.sample_rate = rate
        resampler = av.AudioResampler(format=fmt, layout=layout, rate=rate)
        for piece in resampler.resample(frame):
            out.mux(stream.encode(piece))
        out.mux(stream.encode(None))
    return buffer.getvalue()


@contextmanager
def _prepare_audio(folder: Path) -> Iterator[tuple[Run, list[bytes]]]:
    uploads = folder / "session"
    uploads.mkdir(parents=True, exist_ok=True)

    def run(data: bytes) -> None:
        try:
            clip = store_clip(data, uploads)
        except InputError as err:
            if str(uploads) in str(err):
                raise Breach(f"the message shows the server's folder: {err}", "shows-path") from err
            _no_upload_left(uploads)
            raise
        except BaseException:
            _clear(uploads)  # the exception is the breach; the next input starts clean
            raise
        try:
            while clip.read(READ).size:
                pass
        finally:
            clip.close()
        _no_upload_left(uploads)

    # found: a codec no decoder takes (AttributeError); a LIST claiming 4 GiB, so FFmpeg allocated the 1 GiB its entry
    # claims; a tag that is not UTF-8 (UnicodeDecodeError)
    found = [
        codec_tag_wav(0x1234),
        wav_with_list(b"ISFT" + struct.pack("<I", 1 << 30) + b"ok", claim=0xFFFFFFFF),
        wav_with_list(b"ISFT\x04\x00\x00\x00ok\xb1!"),
    ]
    yield run, [*(_clip(*spec) for spec in AUDIO_FORMATS), *found]


def _clear(uploads: Path) -> list[Path]:
    left = sorted(uploads.iterdir())
    for path in left:
        path.unlink()
    return left


def _wav() -> bytes:
    return _clip("wav", "pcm_s16le", "s16", "mono")


def codec_tag_wav(tag: int) -> bytes:
    """A WAV whose format tag names ``tag``, a codec no decoder takes."""
    data = _wav()
    return data[:20] + tag.to_bytes(2, "little") + data[22:]


def wav_with_list(info: bytes, claim: int | None = None) -> bytes:
    """A WAV with a LIST INFO chunk holding ``info`` before its samples; ``claim``: the size its header says."""
    data = _wav()
    at = data.index(b"data")
    chunk = b"LIST" + struct.pack("<I", len(info) + 4 if claim is None else claim) + b"INFO" + info
    out = data[:at] + chunk + data[at:]
    return out[:4] + struct.pack("<I", len(out) - 8) + out[8:]


def _no_upload_left(uploads: Path) -> None:
    """A refused or spoken clip leaves nothing on disk (removed here too, so the next input starts clean)."""
    left = _clear(uploads)
    if left:
        raise Breach(f"the upload stayed on disk: {[p.name for p in left]}", "left-upload")


def _image(fmt: str, mode: str = "RGB", size: tuple[int, int] = (40, 36)) -> bytes:
    ramp = np.add.outer(np.arange(size[1]), np.arange(size[0])).astype(np.uint8)
    image = Image.fromarray(np.stack([ramp, ramp[::-1], 255 - ramp], axis=-1)).convert(mode)
    buffer = io.BytesIO()
    image.save(buffer, format=fmt)
    return buffer.getvalue()


@contextmanager
def _prepare_reference(folder: Path) -> Iterator[tuple[Run, list[bytes]]]:
    path = folder / "reference"

    def run(data: bytes) -> None:
        path.write_bytes(data)
        load_reference_image(path, (64, 48))

    seeds = [_image("PNG"), _image("PNG", "P"), _image("PNG", "LA"), _image("JPEG"), _image("JPEG", "CMYK"), _image("GIF", "P"), _image("BMP"), _image("TIFF")]
    tiff = seeds[-1]
    at = tiff.index(b"\x11\x01\x04\x00\x01\x00\x00\x00")  # StripOffsets: one LONG
    found = tiff[: at + 2] + b"\x02\x00" + tiff[at + 4 :]  # typed as text: Pillow's seek(str) raised a TypeError
    yield run, [*seeds, found]


TARGETS = [
    Target(
        "audio",
        _prepare_audio,
        ("avatarstream.sources.audio_file", "avatarstream.serve.audio_input", "avatarstream.serve.uploads"),
        words=AUDIO_WORDS,
    ),
    Target(
        "reference-image",
        _prepare_reference,
        ("avatarstream.sources.reference",),
        instrument=("PIL",),
        words=IMAGE_WORDS,
        # an 89-megapixel image (the largest decoded) is 340 MiB as RGBA and 255 MiB once made RGB
        bounds=Bounds(seconds=10.0, rss_mib=768),
    ),
]
