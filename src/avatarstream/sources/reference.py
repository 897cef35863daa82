"""Load a reference image of any size into the frame the model expects (square, or width x height)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
from PIL import Image, UnidentifiedImageError

from avatarstream.errors import InputError


def load_reference_image(path: str | os.PathLike, size: int | tuple[int, int]) -> np.ndarray:
    """Centre-crop to the frame's aspect and resize; ``size`` is a square's side or (width, height). uint8 RGB [H, W, 3]."""
    path = Path(path)
    if not path.exists():
        raise InputError(f"reference image not found: {path}")
    try:
        with Image.open(path) as img:
            img.load()
            rgb = img.convert("RGB")
    except (UnidentifiedImageError, OSError) as exc:
        reason = "not an image" if isinstance(exc, UnidentifiedImageError) else (exc.strerror or str(exc))
        raise InputError(f"cannot read reference {path}: {reason}; use a PNG or JPEG image") from exc
    width, height = (size, size) if isinstance(size, int) else size
    return crop_resize(rgb, width, height)


def square_resize(img: Image.Image, size: int) -> np.ndarray:
    return crop_resize(img, size, size)


def crop_resize(img: Image.Image, width: int, height: int) -> np.ndarray:
    """The largest centred crop with the aspect of ``width`` x ``height``, resized to it."""
    w, h = img.size
    scale = min(w / width, h / height)
    crop_w, crop_h = round(width * scale), round(height * scale)
    left, top = (w - crop_w) // 2, (h - crop_h) // 2
    cropped = img.crop((left, top, left + crop_w, top + crop_h))
    return np.asarray(cropped.resize((width, height), Image.Resampling.LANCZOS), dtype=np.uint8)
