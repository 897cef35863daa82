"""Chunk stage A2V: a few flow-matching steps of the base DiT at low resolution.

N-chunks are conditioned on motion frames (the last frames of the previous
N-chunk, or the reference for the very first chunk); I-chunks on two anchors.
Conditioning frames enter through the model's cond/mask inputs; their
predictions are replaced by the conditioning itself.
"""

from __future__ import annotations

import torch

from avatarstream.pipeline.module import Module
from avatarstream.pipeline.stage import Stage
from avatarstream.pipeline.state import StageContext


class AudioToVideoStage(Stage):
    name = "audio_to_video"
    phase = "chunk"
    reads = ("chunk", "audio_features", "noise", "conditioning", "text_tokens", "reference_tokens", "reference_latent")
    writes = ("latents",)

    def __init__(self, dit: Module, sampler) -> None:
        self.dit = dit
        self.sampler = sampler

    def modules(self) -> tuple[Module, ...]:
        return (self.dit,)

    def run(self, ctx: StageContext) -> None:
        chunk = ctx["chunk"]
        noise = ctx["noise"]
        positions = list(chunk.cond_positions)
        conditioning = ctx["conditioning"]
        if conditioning is None:  # nothing generated before: the reference stands in for motion frames
            conditioning = ctx["reference_latent"][:, :, None].expand(-1, -1, len(positions), -1, -1)
        cond = torch.zeros_like(noise)
        cond[:, :, positions] = conditioning.to(noise.dtype)
        mask = torch.zeros(noise.shape[0], noise.shape[2], device=noise.device, dtype=noise.dtype)
        mask[:, positions] = 1.0
        dit = self.dit.network
        audio, text, reference = ctx["audio_features"], ctx["text_tokens"], ctx["reference_tokens"]

        def velocity(x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
            return dit(x, cond, mask, t, audio, text, reference)

        latents = self.sampler.sample(velocity, noise)
        latents[:, :, positions] = cond[:, :, positions]
        ctx["latents"] = latents
