"""The reference image as FlashHead's reference prepares it: scaled to cover the frame (bilinear), then centre-cropped.

The scale is max(H / h, W / w) with both sides rounded up, and the crop's
offsets are torchvision's ``center_crop``'s (``round``, halves to even). Other
families crop first and resize with Lanczos; the DiT sees the difference, so
this family keeps the reference's.
"""

from __future__ import annotations

import math
import os

import numpy as np
from PIL import Image

from avatarstream.sources.reference import open_reference_image


def cover_and_crop(image: Image.Image, width: int, height: int) -> np.ndarray:
    """uint8 RGB [height, width, 3]."""
    scale = max(height / image.height, width / image.width)
    final_w, final_h = math.ceil(scale * image.width), math.ceil(scale * image.height)
    resized = np.asarray(image.resize((final_w, final_h), resample=Image.Resampling.BILINEAR), dtype=np.uint8)
    top, left = round((final_h - height) / 2.0), round((final_w - width) / 2.0)  # halves to even, as torchvision
    return np.ascontiguousarray(resized[top : top + height, left : left + width])


def load_reference(path: str | os.PathLike, size: tuple[int, int]) -> np.ndarray:
    """The image at ``path`` (checked as every reference is) at ``size`` (width, height)."""
    return cover_and_crop(open_reference_image(path), *size)
