"""Small named makers of bad (and borderline) inputs: each writes one file or folder under ``tmp`` and returns its path.

Headers are written by hand where a library would refuse to write the lie (a 1 Hz WAV, a 10-hour header on a tiny file).
"""

from __future__ import annotations

import io
import json
import math
import pickle
import struct
import zlib
from pathlib import Path

import numpy as np
from PIL import Image

RATE = 16000


def tone(seconds: float = 0.5, rate: int = RATE, channels: int = 1) -> np.ndarray:
    """float32 [n, channels] half-scale 220 Hz tone (speech-like enough for the demo models)."""
    t = np.arange(round(seconds * rate)) / rate
    wave = 0.5 * np.sin(2 * math.pi * 220 * t) * (0.5 + 0.5 * np.sin(2 * math.pi * 3 * t))
    return np.repeat(wave[:, None], channels, axis=1).astype(np.float32)


def wav_bytes(samples: np.ndarray, rate: int = RATE, *, float32: bool = False, claim_bytes: int | None = None) -> bytes:
    """A WAV file of ``samples`` [n, channels]: 16-bit PCM, or 32-bit IEEE float; ``claim_bytes`` is the data size the header claims."""
    channels = samples.shape[1]
    if float32:
        data, tag, width = samples.astype("<f4").tobytes(), 3, 4
    else:
        data, tag, width = (np.clip(samples, -1, 1) * 32767).astype("<i2").tobytes(), 1, 2
    size = len(data) if claim_bytes is None else claim_bytes
    fmt = struct.pack("<HHIIHH", tag, channels, rate, rate * channels * width, channels * width, 8 * width)
    riff = min(4 + 8 + len(fmt) + 8 + size, 0xFFFFFFFF)
    return b"RIFF" + struct.pack("<I", riff) + b"WAVE" + b"fmt " + struct.pack("<I", len(fmt)) + fmt + b"data" + struct.pack("<I", size) + data


def write(tmp: Path, name: str, data: bytes) -> Path:
    path = tmp / name
    path.write_bytes(data)
    return path


# -- audio ------------------------------------------------------------------------------------------


def good_wav(tmp: Path, name: str = "ok.wav", seconds: float = 0.5) -> Path:
    return write(tmp, name, wav_bytes(tone(seconds)))


def empty_file(tmp: Path, name: str = "empty.wav") -> Path:
    return write(tmp, name, b"")


def wav_header_cut(tmp: Path) -> Path:
    """A WAV cut in the middle of its 44-byte header."""
    return write(tmp, "cut-header.wav", wav_bytes(tone())[:22])


def wav_data_cut(tmp: Path) -> Path:
    """A WAV cut in the middle of its samples: what is there decodes, as players do."""
    data = wav_bytes(tone(1.0))
    return write(tmp, "cut-data.wav", data[: len(data) // 2])


def flac_bytes(seconds: float = 0.5) -> bytes:
    import av

    buffer = io.BytesIO()
    with av.open(buffer, "w", format="flac") as out:
        stream = out.add_stream("flac", rate=RATE, layout="mono")
        samples = (tone(seconds)[:, 0] * 32767).astype(np.int16)[None]
        frame = av.AudioFrame.from_ndarray(samples, format="s16", layout="mono")
        frame.sample_rate = RATE
        out.mux(stream.encode(frame))
        out.mux(stream.encode(None))
    return buffer.getvalue()


def flac_header_cut(tmp: Path) -> Path:
    """A FLAC cut inside its STREAMINFO block."""
    return write(tmp, "cut-header.flac", flac_bytes()[:20])


def text_as_wav(tmp: Path) -> Path:
    return write(tmp, "notes.wav", b"this is a shopping list, not a recording\n" * 20)


def random_bytes(tmp: Path, name: str = "noise.mp3", size: int = 20000) -> Path:
    return write(tmp, name, np.random.default_rng(0).bytes(size))


def zero_length_wav(tmp: Path) -> Path:
    return write(tmp, "zero.wav", wav_bytes(np.zeros((0, 1), np.float32)))


def float_wav_with(tmp: Path, value: float) -> Path:
    samples = tone()
    samples[100:200] = value
    return write(tmp, f"float-{value}.wav", wav_bytes(samples, float32=True))


def wav_rate(tmp: Path, rate: int) -> Path:
    """A WAV whose header says ``rate`` Hz (the samples are 0.5 s worth at 16 kHz)."""
    return write(tmp, f"rate-{rate}.wav", wav_bytes(tone(), rate))


def wav_claims_hours(tmp: Path, hours: float = 10.0) -> Path:
    """A tiny WAV whose header claims ``hours`` of 16 kHz mono samples."""
    return write(tmp, "ten-hours.wav", wav_bytes(tone(), claim_bytes=round(hours * 3600 * RATE * 2)))


def wav_channels(tmp: Path, channels: int) -> Path:
    return write(tmp, f"ch{channels}.wav", wav_bytes(tone(channels=channels)))


def png_file(tmp: Path, name: str = "face.png", size: tuple[int, int] = (96, 96), mode: str = "RGB") -> Path:
    rng = np.random.default_rng(1)
    image = Image.fromarray(rng.integers(0, 255, (size[1], size[0], 3), dtype=np.uint8)).convert(mode)
    path = tmp / name
    image.save(path, format="PNG")
    return path


def directory(tmp: Path) -> Path:
    path = tmp / "a-folder"
    path.mkdir()
    return path


# -- images -----------------------------------------------------------------------------------------


def png_cut(tmp: Path) -> Path:
    data = png_file(tmp, "whole.png").read_bytes()
    return write(tmp, "cut.png", data[: len(data) // 2])


def _png_chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


def png_bomb_bytes(width: int = 40000, height: int = 40000) -> bytes:
    """A PNG that claims ``width`` x ``height`` pixels in a few hundred bytes (one grey row repeated: never decode it)."""
    chunk = _png_chunk
    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)  # 8-bit greyscale
    rows = zlib.compress(b"\x00" * (width + 1) * 16)  # a few rows: enough for any decoder to start allocating
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", rows) + chunk(b"IEND", b"")


def png_bomb(tmp: Path) -> Path:
    return write(tmp, "bomb.png", png_bomb_bytes())


def png_text_bomb_bytes() -> bytes:
    """A 64x64 PNG with a compressed text chunk (zTXt) of a few KiB that inflates to 16 MiB, past Pillow's text limit."""
    buffer = io.BytesIO()
    Image.new("RGB", (64, 64), (128, 100, 90)).save(buffer, format="PNG")
    data = buffer.getvalue()
    text = _png_chunk(b"zTXt", b"Comment\x00\x00" + zlib.compress(b"a" * (16 << 20), 9))
    return data[:33] + text + data[33:]  # after the 8-byte signature and the 25-byte IHDR chunk


def png_text_bomb(tmp: Path) -> Path:
    return write(tmp, "text-bomb.png", png_text_bomb_bytes())


def png_tiny(tmp: Path) -> Path:
    return png_file(tmp, "one-pixel.png", (1, 1))


def cmyk_jpeg(tmp: Path) -> Path:
    path = tmp / "cmyk.jpg"
    Image.new("CMYK", (96, 96), (0, 120, 200, 10)).save(path, format="JPEG")
    return path


def animated_gif(tmp: Path) -> Path:
    path = tmp / "anim.gif"
    frames = [Image.new("RGB", (96, 96), colour) for colour in ((200, 0, 0), (0, 200, 0), (0, 0, 200))]
    frames[0].save(path, save_all=True, append_images=frames[1:], duration=100, loop=0)
    return path


# -- weights ----------------------------------------------------------------------------------------


def demo_weights(tmp: Path) -> Path:
    """A complete demo-tiny weights folder (random weights, as training would save them)."""
    from avatarstream.families.demo import DemoFamily
    from avatarstream.models.demo import DemoConfig

    folder = tmp / "weights"
    DemoFamily.random(DemoConfig.tiny()).save(folder)
    return folder


def edit_config(folder: Path, **changes: object) -> Path:
    """Merge ``changes`` into config.json (a dotted key such as ``dit.heads`` edits a nested section)."""
    path = folder / "config.json"
    config = json.loads(path.read_text())
    for key, value in changes.items():
        section, _, name = key.rpartition("__")
        (config[section] if section else config)[name] = value
    path.write_text(json.dumps(config))
    return folder


def pickle_as_safetensors(folder: Path, module: str = "vae") -> Path:
    import torch

    buffer = io.BytesIO()
    torch.save({"w": torch.zeros(2)}, buffer, pickle_protocol=pickle.HIGHEST_PROTOCOL)
    (folder / f"{module}.safetensors").write_bytes(buffer.getvalue())
    return folder


def truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def drop_tensor(folder: Path, module: str = "vae") -> Path:
    from safetensors.torch import load_file, save_file

    path = folder / f"{module}.safetensors"
    tensors = load_file(str(path))
    del tensors[min(tensors)]
    save_file(tensors, str(path))
    return folder


def infinitetalk_like(tmp: Path) -> Path:
    """A folder laid out like the InfiniteTalk downloads (no demo config.json)."""
    root = tmp / "downloads"
    (root / "Wan2.1-I2V-14B-480P").mkdir(parents=True)
    (root / "Wan2.1-I2V-14B-480P" / "config.json").write_text(json.dumps({"model_type": "i2v", "dim": 64}))
    (root / "InfiniteTalk").mkdir()
    (root / "chinese-wav2vec2-base").mkdir()
    return root


def link_outside(folder: Path, module: str = "vae") -> Path:
    """The module's file moved out of the folder and linked back: the loader must not follow it."""
    path = folder / f"{module}.safetensors"
    outside = folder.parent / f"elsewhere-{module}.safetensors"
    path.rename(outside)
    path.symlink_to(outside)
    return folder


def integer_tensor(folder: Path, module: str = "vae") -> Path:
    """One float weight of the module stored as int32 (same shape)."""
    import torch
    from safetensors.torch import load_file, save_file

    path = folder / f"{module}.safetensors"
    tensors = load_file(str(path))
    key = min(k for k, v in tensors.items() if v.is_floating_point())
    tensors[key] = tensors[key].to(torch.int32)
    save_file(tensors, str(path))
    return folder


GOLDEN = Path(__file__).parents[1] / "fixtures" / "infinitetalk-tiny"


def infinitetalk_weights(tmp: Path) -> Path:
    """A writable copy of the tiny InfiniteTalk checkpoint of the golden set (original layout)."""
    import shutil

    root = tmp / "infinitetalk"
    shutil.copytree(GOLDEN / "weights", root)
    for path in root.rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)
    return root


def edit_json(path: Path, **changes: object) -> Path:
    """Merge ``changes`` into the JSON object at ``path``."""
    path.write_text(json.dumps({**json.loads(path.read_text()), **changes}))
    return path


def replace_tensor(path: Path, key: str, tensor: object) -> Path:
    """``path``'s tensor ``key`` replaced by ``tensor`` (None drops it)."""
    from safetensors.torch import load_file, save_file

    tensors = load_file(str(path))
    if tensor is None:
        del tensors[key]
    else:
        tensors[key] = tensor
    save_file(tensors, str(path))
    return path


def golden_set(tmp: Path) -> Path:
    """A writable copy of the tiny InfiniteTalk golden set (golden.json, cases/, weights/)."""
    import shutil

    root = tmp / "golden"
    shutil.copytree(GOLDEN, root)
    for path in root.rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)
    return root
