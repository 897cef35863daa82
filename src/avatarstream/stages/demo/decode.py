"""Final stage Decode: the causal VAE decoder, chunk by chunk with its cache, to RGB frames."""

from __future__ import annotations

from avatarstream.models.demo import CausalVAE
from avatarstream.pipeline.stage import Stage
from avatarstream.pipeline.state import StageContext
from avatarstream.runtime.module import Module
from avatarstream.stages.common import video_to_frames


class DecodeStage(Stage):
    """Decodes frames in published order; the decoder's causal cache lives in the session state."""

    name = "decode"
    phase = "final"
    reads = ("sr_latents",)
    writes = ("frames",)
    resumes_with_cache = True  # a few latent frames, fixed in size: a resumed decoder continues it exactly

    def __init__(self, vae: Module) -> None:
        self.vae = vae

    def modules(self) -> tuple[Module, ...]:
        return (self.vae,)

    def run(self, ctx: StageContext) -> None:
        video, ctx.cache = self.vae.network_as(CausalVAE).decode(ctx["sr_latents"], ctx.cache)
        ctx["frames"] = video_to_frames(video)
