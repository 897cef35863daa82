"""Colour correction of decoded frames: each frame's Lab statistics moved to the reference image's.

Long generations drift in colour; InfiniteTalk's CLI corrects every frame of a
chunk towards the reference image (per Lab channel: shift and scale the
frame's mean and standard deviation to the reference's) and blends the result
with the frame by ``strength``; the Wan decode stage offers the same to any
Wan-based family. Each frame is corrected alone, so the result does not
depend on how frames are grouped into chunks. The reference converts with
scikit-image (sRGB, D65, 2° observer); these are the same formulas in torch,
so the frames of a chunk are corrected at once, on the device they are on
(tests/components/test_wan_color_match.py holds them to scikit-image).
"""

from __future__ import annotations

import torch

#: sRGB (linear) -> CIE XYZ, and the D65 white point for the 2° observer: scikit-image's constants.
XYZ_FROM_RGB = ((0.412453, 0.357580, 0.180423), (0.212671, 0.715160, 0.072169), (0.019334, 0.119193, 0.950227))
WHITE_D65 = (0.95047, 1.0, 1.08883)
_EPSILON, _KAPPA, _OFFSET = 0.008856, 7.787, 16.0 / 116.0


def _constants(like: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    matrix = torch.tensor(XYZ_FROM_RGB, dtype=torch.float64)
    white = torch.tensor(WHITE_D65, dtype=torch.float64)
    inverse = torch.linalg.inv(matrix)
    return matrix.to(like.device, like.dtype), inverse.to(like.device, like.dtype), white.to(like.device, like.dtype)


def rgb_to_lab(rgb: torch.Tensor) -> torch.Tensor:
    """sRGB in [0, 1], channels last -> CIE Lab."""
    xyz_from_rgb, _, white = _constants(rgb)
    linear = torch.where(rgb > 0.04045, ((rgb + 0.055) / 1.055) ** 2.4, rgb / 12.92)
    xyz = (linear @ xyz_from_rgb.T) / white
    f = torch.where(xyz > _EPSILON, xyz.clamp_min(0) ** (1 / 3), _KAPPA * xyz + _OFFSET)
    fx, fy, fz = f.unbind(-1)
    return torch.stack([116 * fy - 16, 500 * (fx - fy), 200 * (fy - fz)], dim=-1)


def lab_to_rgb(lab: torch.Tensor) -> torch.Tensor:
    """CIE Lab, channels last -> sRGB clipped to [0, 1] (a negative Z is clipped to 0 first, as scikit-image does)."""
    _, rgb_from_xyz, white = _constants(lab)
    light, a, b = lab.unbind(-1)
    fy = (light + 16) / 116
    f = torch.stack([a / 500 + fy, fy, (fy - b / 200).clamp_min(0)], dim=-1)
    xyz = torch.where(f > 0.2068966, f**3, (f - _OFFSET) / _KAPPA) * white
    linear = xyz @ rgb_from_xyz.T
    return torch.where(linear > 0.0031308, 1.055 * linear.clamp_min(0) ** (1 / 2.4) - 0.055, linear * 12.92).clamp(0, 1)


def match_colors(video: torch.Tensor, reference: torch.Tensor, strength: float) -> torch.Tensor:
    """``video`` [1, 3, T, H, W] in [-1, 1] corrected towards ``reference`` [1, 3, 1, H', W'] in [-1, 1]; float32.

    ``strength`` 0 returns the video as it is, 1 the fully corrected frames; a
    channel without variation in a frame takes the reference's mean.
    """
    if not 0.0 <= strength <= 1.0:
        raise ValueError(f"strength must be between 0 and 1, got {strength}")
    if strength == 0.0:
        return video
    frames = ((video[0].float().permute(1, 2, 3, 0) + 1) / 2).clamp(0, 1)  # [T, H, W, 3]
    target = rgb_to_lab(((reference[0, :, 0].float().permute(1, 2, 0) + 1) / 2).clamp(0, 1).to(frames.device))
    mean_ref, std_ref = target.mean(dim=(0, 1)), target.std(dim=(0, 1), correction=0)
    lab = rgb_to_lab(frames)
    mean, std = lab.mean(dim=(1, 2), keepdim=True), lab.std(dim=(1, 2), correction=0, keepdim=True)
    moved = torch.where(std == 0, mean_ref, (lab - mean) * (std_ref / std) + mean_ref)
    blended = (1 - strength) * frames + strength * lab_to_rgb(moved)
    return (blended * 2 - 1).permute(3, 0, 1, 2)[None].contiguous()
