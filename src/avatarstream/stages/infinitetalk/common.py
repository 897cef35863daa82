"""Small helpers the InfiniteTalk stages share."""

from __future__ import annotations

import torch

from avatarstream.pipeline.module import Module


def device_and_dtype(module: Module) -> tuple[torch.device, torch.dtype]:
    """Where the module's weights are right now (inside the runtime's acquire) and their compute dtype.

    The dtype is the largest weight's: a few small tables (modulation, norms) stay float32 under bf16.
    """
    weight = max((p for p in module.network.parameters() if p.is_floating_point()), key=lambda p: p.numel())
    return weight.device, weight.dtype
