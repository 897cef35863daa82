"""FlashVSR's colour fix: each decoded frame's per-channel mean and spread moved to its upscaled LQ frame's (adain).

Statistics over the frame's pixels, the spread a biased standard deviation
with 1e-5 added to the variance, the result clamped to [-1, 1]. Each frame is
fixed alone, so the result does not depend on how frames are grouped.
"""

from __future__ import annotations

import torch

EPS = 1e-5


def _mean_std(frames: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    flat = frames.flatten(-2)
    return flat.mean(dim=-1)[..., None, None], (flat.var(dim=-1, unbiased=False) + EPS).sqrt()[..., None, None]


def adain_fix(frames: torch.Tensor, reference: torch.Tensor) -> torch.Tensor:
    """``frames`` and ``reference`` [1, 3, T, H, W] in [-1, 1] -> ``frames`` with each frame's channel statistics of ``reference``'s."""
    mean, std = _mean_std(frames)
    ref_mean, ref_std = _mean_std(reference)
    return ((frames - mean) / std * ref_std + ref_mean).clamp(-1.0, 1.0)
