"""Helpers stages of more than one family share: tensors to and from images, where a module's weights are."""

from __future__ import annotations

import numpy as np
import torch

from avatarstream.runtime.module import Module


def device_and_dtype(module: Module) -> tuple[torch.device, torch.dtype]:
    """Where the module's weights are right now (inside the runtime's acquire) and their compute dtype.

    The dtype is the largest weight's: a few small tables (modulation, norms) stay float32 under bf16.
    """
    weight = max((p for p in module.network.parameters() if p.is_floating_point()), key=lambda p: p.numel())
    return weight.device, weight.dtype


def image_to_video_tensor(image: np.ndarray, device: torch.device) -> torch.Tensor:
    """uint8 RGB [H, W, 3] -> float [1, 3, 1, H, W] in [-1, 1]."""
    tensor = torch.from_numpy(np.array(image, dtype=np.uint8)).to(device)
    return (tensor.permute(2, 0, 1).float() / 127.5 - 1.0)[None, :, None]


def video_to_frames(video: torch.Tensor) -> torch.Tensor:
    """[1, 3, T, H, W] in [-1, 1] -> uint8 [T, H, W, 3] where the video is (the pipeline reads final frames to the host, counted)."""
    pixels = ((video[0].clamp(-1, 1) + 1) * 127.5).round().to(torch.uint8)
    return pixels.permute(1, 2, 3, 0).contiguous()
