"""FlashVSR's input and output pixels: the x4 bicubic upscale with a centre crop to multiples of 128, and uint8 output.

The upscale is PIL's bicubic (its fixed-point resampling, so the reference's
pixels are reproduced bit for bit) to (round(4w), round(4h)), then a centre
crop to the largest multiples of 128 that fit; frames become ``u8/255*2-1``.
Output pixels are ``(x+1)*127.5`` truncated to uint8, as the reference writes them.
"""

from __future__ import annotations

import numpy as np
import torch
from PIL import Image

from avatarstream.models.flashvsr.config import SCALE, SIZE_MULTIPLE


def output_size(width: int, height: int) -> tuple[int, int]:
    """(width, height) of the frames made from ``width`` x ``height`` low-resolution frames (0 when too small)."""
    return round(width * SCALE) // SIZE_MULTIPLE * SIZE_MULTIPLE, round(height * SCALE) // SIZE_MULTIPLE * SIZE_MULTIPLE


def upscale(frames: torch.Tensor) -> torch.Tensor:
    """uint8 [T, h, w, 3] -> uint8 [T, H, W, 3]: x4 bicubic, centre-cropped to ``output_size``."""
    count, h, w, _ = frames.shape
    scaled = (round(w * SCALE), round(h * SCALE))
    width, height = output_size(w, h)
    left, top = (scaled[0] - width) // 2, (scaled[1] - height) // 2
    out = np.empty((count, height, width, 3), dtype=np.uint8)
    for i, frame in enumerate(frames.cpu().numpy()):
        image = Image.fromarray(frame).resize(scaled, Image.Resampling.BICUBIC)
        out[i] = np.asarray(image.crop((left, top, left + width, top + height)))
    return torch.from_numpy(out)


def to_unit(frames: torch.Tensor, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    """uint8 [T, H, W, 3] -> [1, 3, T, H, W] in [-1, 1] (``u8/255*2-1`` in float32, then ``dtype``)."""
    unit = frames.to(device=device, dtype=torch.float32).permute(3, 0, 1, 2)[None] / 255.0 * 2.0 - 1.0
    return unit.to(dtype)


def to_uint8(frames: torch.Tensor) -> torch.Tensor:
    """[1, 3, T, H, W] in [-1, 1] -> uint8 [T, H, W, 3], truncated."""
    return ((frames[0].float() + 1) * 127.5).clamp(0, 255).to(torch.uint8).permute(1, 2, 3, 0)
