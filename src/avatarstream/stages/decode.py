"""Final stage Decode: the causal VAE decoder, chunk by chunk with its cache, to RGB frames."""

from __future__ import annotations

import torch

from avatarstream.models.demo import CausalVAE
from avatarstream.pipeline.module import Module
from avatarstream.pipeline.stage import Stage
from avatarstream.pipeline.state import StageContext


def video_to_frames(video: torch.Tensor) -> torch.Tensor:
    """[1, 3, T, H, W] in [-1, 1] -> uint8 [T, H, W, 3] on the CPU."""
    pixels = ((video[0].clamp(-1, 1) + 1) * 127.5).round().to(torch.uint8)
    return pixels.permute(1, 2, 3, 0).contiguous().cpu()


class DecodeStage(Stage):
    """Decodes frames in published order; the decoder's causal cache lives in the session state."""

    name = "decode"
    phase = "final"
    reads = ("sr_latents",)
    writes = ("frames",)

    def __init__(self, vae: Module) -> None:
        self.vae = vae

    def modules(self) -> tuple[Module, ...]:
        return (self.vae,)

    def run(self, ctx: StageContext) -> None:
        video, ctx.cache = self.vae.network_as(CausalVAE).decode(ctx["sr_latents"], ctx.cache)
        ctx["frames"] = video_to_frames(video).numpy()
