"""Load a reference image of any size into the square frame the model expects."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
from PIL import Image, UnidentifiedImageError

from avatarstream.errors import InputError


def load_reference_image(path: str | os.PathLike, size: int) -> np.ndarray:
    """Centre-crop to a square and resize to ``size``; returns uint8 RGB [size, size, 3]."""
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
    return square_resize(rgb, size)


def square_resize(img: Image.Image, size: int) -> np.ndarray:
    width, height = img.size
    side = min(width, height)
    left, top = (width - side) // 2, (height - side) // 2
    square = img.crop((left, top, left + side, top + side))
    return np.asarray(square.resize((size, size), Image.Resampling.LANCZOS), dtype=np.uint8)
