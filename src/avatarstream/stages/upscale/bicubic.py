"""Final stage of the ``bicubic`` upscaler: each frame interpolated ``scale`` times wider and taller, where the frames are."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from avatarstream.pipeline.stage import Stage
from avatarstream.pipeline.state import StageContext


class BicubicStage(Stage):
    name = "upscale"
    phase = "final"
    reads = ("frames",)
    writes = ("frames",)

    def __init__(self, scale: int) -> None:
        self.scale = scale

    def run(self, ctx: StageContext) -> None:
        frames = torch.as_tensor(ctx["frames"])  # uint8 [T, H, W, 3], on the device the decode left it
        pixels = frames.permute(0, 3, 1, 2).float()
        upscaled = F.interpolate(pixels, scale_factor=self.scale, mode="bicubic", align_corners=False)
        ctx["frames"] = upscaled.round().clamp(0, 255).to(torch.uint8).permute(0, 2, 3, 1).contiguous()
