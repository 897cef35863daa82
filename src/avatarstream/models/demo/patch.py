"""Patchify / unpatchify between latent video grids and token sequences."""

from __future__ import annotations

from torch import Tensor


def patchify(x: Tensor, patch: int) -> Tensor:
    """[B, C, T, H, W] -> [B, T*(H/p)*(W/p), C*p*p], tokens in (t, h, w) raster order."""
    b, c, t, h, w = x.shape
    if h % patch or w % patch:
        raise ValueError(f"spatial size {h}x{w} is not divisible by patch size {patch}")
    x = x.reshape(b, c, t, h // patch, patch, w // patch, patch)
    return x.permute(0, 2, 3, 5, 1, 4, 6).reshape(b, t * (h // patch) * (w // patch), c * patch * patch)


def unpatchify(tokens: Tensor, frames: int, height: int, width: int, patch: int) -> Tensor:
    """Inverse of `patchify`: [B, T*h*w, C*p*p] -> [B, C, T, h*p, w*p] (h, w in patches)."""
    b, _, d = tokens.shape
    c = d // (patch * patch)
    x = tokens.reshape(b, frames, height, width, c, patch, patch)
    return x.permute(0, 4, 1, 2, 5, 3, 6).reshape(b, c, frames, height * patch, width * patch)
