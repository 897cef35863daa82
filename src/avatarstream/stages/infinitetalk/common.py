"""Small helpers the InfiniteTalk stages share."""

from __future__ import annotations

import torch

from avatarstream.pipeline.module import Module


def device_and_dtype(module: Module) -> tuple[torch.device, torch.dtype]:
    """Where the module's weights are right now (inside the runtime's acquire) and their compute dtype."""
    weight = next(p for p in module.network.parameters() if p.is_floating_point() and p.dim() > 1)
    return weight.device, weight.dtype
