"""The architecture's colour correction: each decoded frame's Lab statistics moved to the reference image's.

Long generations drift in colour; the authors' CLI corrects every frame of a
chunk towards the reference image (per Lab channel: shift and scale the
frame's mean and standard deviation to the reference's) and blends the result
with the frame by ``strength``. Each frame is corrected alone, so the result
does not depend on how frames are grouped into chunks. The conversions are
scikit-image's, as the reference uses them.
"""

from __future__ import annotations

import warnings

import numpy as np
import torch
from skimage import color


def lab_stats(pixels: np.ndarray) -> list[tuple[np.floating, np.floating]]:
    """(mean, standard deviation) of each Lab channel of an RGB image in [0, 1] ([H, W, 3]), one channel at a time as the reference sums."""
    lab = color.rgb2lab(pixels)
    return [(lab[:, :, j].mean(), lab[:, :, j].std()) for j in range(3)]


def match_colors(video: torch.Tensor, reference: torch.Tensor, strength: float) -> torch.Tensor:
    """``video`` [1, 3, T, H, W] in [-1, 1] corrected towards ``reference`` [1, 3, 1, H', W'] in [-1, 1]; float32 on the CPU.

    ``strength`` 0 returns the video as it is, 1 the fully corrected frames; a
    channel without variation in a frame takes the reference's mean.
    """
    if not 0.0 <= strength <= 1.0:
        raise ValueError(f"strength must be between 0 and 1, got {strength}")
    if strength == 0.0:
        return video
    frames = np.clip((video[0].permute(1, 2, 3, 0).float().cpu().numpy() + 1.0) / 2.0, 0.0, 1.0)
    target = np.clip((reference[0, :, 0].permute(1, 2, 0).float().cpu().numpy() + 1.0) / 2.0, 0.0, 1.0)
    stats_ref = lab_stats(target)
    out = np.empty_like(frames)
    for i, frame in enumerate(frames):
        lab = color.rgb2lab(frame)
        for j, (mean_ref, std_ref) in enumerate(stats_ref):
            channel = lab[:, :, j]
            mean, std = channel.mean(), channel.std()
            lab[:, :, j] = mean_ref if std == 0 else (channel - mean) * (std_ref / std) + mean_ref
        with warnings.catch_warnings():  # out-of-gamut Lab is clipped, as the reference does; scikit-image warns on every frame
            warnings.filterwarnings("ignore", message=".*negative Z values.*")
            corrected = np.clip(color.lab2rgb(lab), 0.0, 1.0)
        out[i] = (1 - strength) * frame + strength * corrected
    return torch.from_numpy(out * 2.0 - 1.0).permute(3, 0, 1, 2)[None].contiguous()
