"""Load a reference image of any size into the frame the model expects (square, or width x height).

Only the first frame of an animated image is used; CMYK, palette and greyscale images are converted to RGB.
The header's size is checked before any pixel is decoded: a tiny file may claim billions of pixels.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import numpy as np
from PIL import Image, UnidentifiedImageError

from avatarstream.errors import InputError

#: Smallest side that can still show a face; the largest image decoded (Pillow's own bomb limit, about 89 megapixels).
MIN_SIDE = 32
MAX_PIXELS = 89_478_485


def load_reference_image(path: str | os.PathLike, size: int | tuple[int, int]) -> np.ndarray:
    """Centre-crop to the frame's aspect and resize; ``size`` is a square's side or (width, height). uint8 RGB [H, W, 3]."""
    width, height = (size, size) if isinstance(size, int) else size
    return crop_resize(open_reference_image(path), width, height)


def open_reference_image(path: str | os.PathLike) -> Image.Image:
    """The image as RGB, its size checked from the header before any pixel is decoded; clear errors for anything unusable."""
    path = Path(path)
    if not path.exists():
        raise InputError(f"reference image not found: {path}")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(path) as img:
                _check_size(path, *img.size)
                img.load()
                rgb = img.convert("RGB")
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as exc:
        limit = f"{MAX_PIXELS / 1e6:.0f} megapixels"
        raise InputError(f"cannot read reference {path}: it claims more than {limit} (a decompression bomb?); scale it down to at most {limit}") from exc
    except InputError:
        raise
    # Pillow's plugins parse headers in Python and fail as the parse breaks: OSError mostly, a ValueError past a decoder's
    # own limit (a text chunk past Pillow's), a TypeError for a TIFF whose strip offsets are typed as text: the file's fault.
    except Exception as exc:
        reason = "not an image" if isinstance(exc, UnidentifiedImageError) else (getattr(exc, "strerror", None) or str(exc))
        raise InputError(f"cannot read reference {path}: {' '.join(reason.split()) or type(exc).__name__}; use a PNG or JPEG image") from exc
    return rgb


def _check_size(path: Path, width: int, height: int) -> None:
    """Refuse an image too large to decode safely or too small to show a face, from its header alone."""
    if width * height > MAX_PIXELS:
        raise InputError(f"cannot read reference {path}: it is {width}x{height} pixels; scale it down to at most {MAX_PIXELS / 1e6:.0f} megapixels")
    if min(width, height) < MIN_SIDE:
        raise InputError(f"reference {path} is {width}x{height} pixels, too small to show a face; use an image at least {MIN_SIDE}x{MIN_SIDE}")


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
