"""Final stage SR: one identity-aware step from base to output resolution."""

from __future__ import annotations

from avatarstream.pipeline.stage import Stage
from avatarstream.pipeline.state import StageContext
from avatarstream.runtime.module import Module
from avatarstream.stages.seeding import seeded_noise


class SuperResolutionStage(Stage):
    """One noise frame per session for every output frame: SR output never depends on how frames were grouped,
    and a still face stays still (noise drawn per frame made every frame differ, a flicker 8x the ground
    truth's frame-to-frame change)."""

    name = "super_resolution"
    phase = "final"
    reads = ("latents", "frames_range", "reference_latent_full")
    writes = ("sr_latents",)

    def __init__(self, sr: Module) -> None:
        self.sr = sr

    def modules(self) -> tuple[Module, ...]:
        return (self.sr,)

    def run(self, ctx: StageContext) -> None:
        low = ctx["latents"]
        reference = ctx["reference_latent_full"]
        batch, channels, height, width = reference.shape
        first, end = ctx["frames_range"]
        noise = seeded_noise((batch, channels, 1, height, width), low.device, ctx.seed, "sr")
        ctx["sr_latents"] = self.sr.network(low, reference, noise.expand(-1, -1, end - first, -1, -1))
