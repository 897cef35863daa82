"""Objectives shared by the trainers: mouth-weighted errors and the flow-matching target."""

from __future__ import annotations

import torch
from torch import Tensor

from avatarstream.avatars.renderer import FRAME_SIZE, MOUTH_BOX

MOUTH_WEIGHT = 4.0
"""Extra weight of the mouth region: it is a few percent of the frame but carries all of lip sync."""


def mouth_weights(height: int, width: int, device: torch.device | None = None) -> Tensor:
    """[height, width] weights for a map covering the frame: 1 + MOUTH_WEIGHT inside the mouth box."""
    top, bottom, left, right = MOUTH_BOX
    sy, sx = height / FRAME_SIZE, width / FRAME_SIZE
    weights = torch.ones(height, width, device=device)
    weights[int(top * sy) : max(int(bottom * sy + 0.999), int(top * sy) + 1), int(left * sx) : max(int(right * sx + 0.999), int(left * sx) + 1)] += MOUTH_WEIGHT
    return weights / weights.mean()


def weighted_error(pred: Tensor, target: Tensor, *, power: int = 2, mask: Tensor | None = None) -> Tensor:
    """Mean |pred - target|^power over [..., H, W] maps, mouth-weighted; `mask` (broadcastable) selects elements."""
    weights = mouth_weights(pred.shape[-2], pred.shape[-1], pred.device)
    error = (pred - target).abs().pow(power) * weights
    if mask is None:
        return error.mean()
    mask = mask.expand_as(error)
    return (error * mask).sum() / mask.sum().clamp_min(1.0)


def flow_times(batch: int, shift: float, generator: torch.Generator) -> Tensor:
    """Half uniform, half shifted towards noise like the sampler's schedule (shift > 1)."""
    u = torch.rand(batch, generator=generator)
    shifted = shift * u / (1 + (shift - 1) * u)
    return torch.where(torch.arange(batch) % 2 == 0, u, shifted)
