"""FlashHead's colour correction: every frame's Lab mean and standard deviation moved to the reference image's.

The reference's own Lab conversion (``utils/utils.py``), not scikit-image's
that ``components/wan/color_match.py`` follows: other sRGB matrices
(0.4124564...), XYZ clamped to [1e-8, 1] before the cube root, kappa 903.3 in
both directions, a zero-variance channel divided by 1. The next chunk's motion
latents are encoded from these corrected frames, so the constants matter to
every later chunk. Frames are corrected one by one (statistics per frame), in
the video's dtype.
"""

from __future__ import annotations

import torch

XYZ_FROM_RGB = ((0.4124564, 0.3575761, 0.1804375), (0.2126729, 0.7151522, 0.0721750), (0.0193339, 0.1191920, 0.9503041))
RGB_FROM_XYZ = ((3.2404542, -1.5371385, -0.4985314), (-0.9692660, 1.8760108, 0.0415560), (0.0556434, -0.2040259, 1.0572252))
WHITE_D65 = (0.95047, 1.0, 1.08883)
EPSILON, KAPPA = 0.008856, 903.3


def _matrix(values: tuple[tuple[float, ...], ...] | tuple[float, ...], like: torch.Tensor) -> torch.Tensor:
    return torch.tensor(values, dtype=like.dtype, device=like.device)


def rgb_to_lab(rgb: torch.Tensor) -> torch.Tensor:
    """sRGB in [0, 1], channels last -> Lab."""
    linear = torch.where(rgb > 0.04045, ((rgb + 0.055) / 1.055) ** 2.4, rgb / 12.92)
    xyz = (linear.reshape(-1, 3) @ _matrix(XYZ_FROM_RGB, rgb).T).reshape(rgb.shape)
    xyz = torch.clamp(xyz / _matrix(WHITE_D65, rgb), 1e-8, 1.0)
    f = torch.where(xyz > EPSILON, xyz ** (1 / 3), (KAPPA * xyz + 16) / 116)
    return torch.stack([116 * f[..., 1] - 16, 500 * (f[..., 0] - f[..., 1]), 200 * (f[..., 1] - f[..., 2])], dim=-1)


def lab_to_rgb(lab: torch.Tensor) -> torch.Tensor:
    """Lab, channels last -> sRGB clipped to [0, 1]."""
    light, a, b = lab[..., 0], lab[..., 1], lab[..., 2]
    fy = (light + 16) / 116
    fx, fz = a / 500 + fy, fy - b / 200
    x = torch.where(fx**3 > EPSILON, fx**3, (116 * fx - 16) / KAPPA)
    y = torch.where(light > KAPPA * EPSILON, ((light + 16) / 116) ** 3, light / KAPPA)
    z = torch.where(fz**3 > EPSILON, fz**3, (116 * fz - 16) / KAPPA)
    xyz = torch.stack([x, y, z], dim=-1) * _matrix(WHITE_D65, lab)
    linear = (xyz.reshape(-1, 3) @ _matrix(RGB_FROM_XYZ, lab).T).reshape(xyz.shape)
    return torch.where(linear > 0.0031308, 1.055 * linear ** (1 / 2.4) - 0.055, 12.92 * linear).clamp(0.0, 1.0)


def correct_colors(video: torch.Tensor, reference: torch.Tensor, strength: float) -> torch.Tensor:
    """``video`` [B, 3, T, H, W] in [-1, 1] matched towards ``reference`` [B, 3, 1, H, W] and blended by ``strength`` (0..1)."""
    if not 0.0 <= strength <= 1.0:
        raise ValueError(f"strength must be between 0 and 1, got {strength}")
    if strength == 0.0:
        return video
    source = ((video + 1.0) / 2.0).permute(0, 2, 3, 4, 1)
    target = rgb_to_lab(((reference.to(video) + 1.0) / 2.0).permute(0, 2, 3, 4, 1))
    lab = rgb_to_lab(source)
    ref_mean, ref_std = target.mean(dim=(2, 3), keepdim=True), target.std(dim=(2, 3), keepdim=True, unbiased=False)
    mean, std = lab.mean(dim=(2, 3), keepdim=True), lab.std(dim=(2, 3), keepdim=True, unbiased=False)
    std = torch.where(std < 1e-8, torch.ones_like(std), std)
    corrected = lab_to_rgb((lab - mean) * (ref_std / std) + ref_mean)
    blended = (1 - strength) * source + strength * corrected
    return (blended.permute(0, 4, 1, 2, 3) * 2.0 - 1.0).contiguous()


def to_uint8(video: torch.Tensor) -> torch.Tensor:
    """[B, 3, T, H, W] in [-1, 1] -> uint8 [T, H, W, 3] of the first video, truncated as the reference's ``astype(np.uint8)``."""
    return (((video[0].float() + 1) / 2).permute(1, 2, 3, 0).clip(0, 1) * 255).to(torch.uint8)
