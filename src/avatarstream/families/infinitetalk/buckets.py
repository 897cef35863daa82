"""The reference CLI's size buckets and its resize-and-crop of the reference image (the reference fidelity's input).

The CLI picks, for the image's height/width ratio, the closest bucket of its
``--size`` table (``infinitetalk-480``: 627 bucket, ``-720``: 960), scales the
image so it covers the bucket (sides rounded up), resizes it bilinearly and
crops the centre, the offset rounded half to even as Python rounds.
"""

from __future__ import annotations

import math

import numpy as np
from PIL import Image

#: (height, width) by the height/width ratio each bucket is named for: the reference's infinitetalk-480 table.
BUCKETS_480: dict[str, tuple[int, int]] = {
    "0.26": (320, 1216), "0.38": (384, 1024), "0.50": (448, 896), "0.67": (512, 768), "0.82": (576, 704),
    "1.00": (640, 640), "1.22": (704, 576), "1.50": (768, 512), "1.86": (832, 448), "2.00": (896, 448),
    "2.50": (960, 384), "2.83": (1088, 384), "3.60": (1152, 320), "3.80": (1216, 320), "4.00": (1280, 320),
}  # fmt: skip


def nearest_bucket(height: int, width: int, table: dict[str, tuple[int, int]] = BUCKETS_480) -> tuple[int, int]:
    """(height, width) of the bucket whose ratio is closest to ``height / width`` (the first such in table order on a tie)."""
    ratio = height / width
    return table[min(table, key=lambda key: abs(float(key) - ratio))]


def resize_and_center_crop(image: Image.Image, height: int, width: int) -> np.ndarray:
    """uint8 RGB [height, width, 3]: scaled to cover the target (sides rounded up), bilinear, centre-cropped (offsets half to even)."""
    scale = max(height / image.height, width / image.width)
    scaled_h, scaled_w = math.ceil(scale * image.height), math.ceil(scale * image.width)
    pixels = np.asarray(image.convert("RGB").resize((scaled_w, scaled_h), resample=Image.Resampling.BILINEAR), dtype=np.uint8)
    top, left = round((scaled_h - height) / 2.0), round((scaled_w - width) / 2.0)
    return np.ascontiguousarray(pixels[top : top + height, left : left + width])
