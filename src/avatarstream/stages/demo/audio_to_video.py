"""Chunk stage A2V: a few flow-matching steps of the base DiT at low resolution.

N-chunks are conditioned on motion frames (the last frames of the previous
N-chunk, or the reference for the very first chunk); I-chunks on two anchors.
Conditioning frames enter through the model's cond/mask inputs; their
predictions are replaced by the conditioning itself.
"""

from __future__ import annotations

import torch

from avatarstream.pipeline.stage import Stage
from avatarstream.pipeline.state import StageContext
from avatarstream.runtime.module import Module


class AudioToVideoStage(Stage):
    name = "audio_to_video"
    role = "generate"
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
        conditioning = ctx["conditioning"]
        if conditioning is None:  # nothing generated before: the reference stands in for motion frames
            conditioning = ctx["reference_latent"][:, :, None].expand(-1, -1, len(chunk.cond_positions), -1, -1)
        ctx["latents"] = sample_window(
            self.dit.network, self.sampler, noise, conditioning, list(chunk.cond_positions), ctx["audio_features"], ctx["text_tokens"], ctx["reference_tokens"]
        )


def sample_window(
    dit, sampler, noise: torch.Tensor, conditioning: torch.Tensor, positions: list[int], audio: torch.Tensor, text: torch.Tensor, reference: torch.Tensor
) -> torch.Tensor:
    """Samples a window whose frames at `positions` are given; the trainer's rollouts call it too.

    At every step the conditioning positions of the input hold the conditioning noised to the step's t,
    as in training (x_t = (1 - t) x0 + t noise everywhere); left to the sampler they would follow the
    model's untrained velocity there and reach the model far from anything it was trained on.
    """
    cond = torch.zeros_like(noise)
    cond[:, :, positions] = conditioning.to(noise.dtype)
    mask = torch.zeros(noise.shape[0], noise.shape[2], device=noise.device, dtype=noise.dtype)
    mask[:, positions] = 1.0
    given, given_noise = cond[:, :, positions], noise[:, :, positions]  # gathered once, used at every step

    def velocity(x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        x = x.clone()
        tt = t[:, None, None, None, None]
        x[:, :, positions] = (1 - tt) * given + tt * given_noise
        return dit(x, cond, mask, t, audio, text, reference)

    latents = sampler.sample(velocity, noise)
    latents[:, :, positions] = given
    return latents
