"""Final stage Decode: the Wan VAE's causal decoder over the published timeline, its cache owned by the session."""

from __future__ import annotations

from diffusers.models.autoencoders.autoencoder_kl_wan import AutoencoderKLWan

from avatarstream.models.infinitetalk.vae import DecoderCache, decode
from avatarstream.pipeline.stage import Stage
from avatarstream.pipeline.state import StageContext
from avatarstream.runtime.module import Module
from avatarstream.stages.common import device_and_dtype, video_to_frames


class WanDecodeStage(Stage):
    name = "decode"
    phase = "final"
    reads = ("latents",)
    writes = ("frames",)
    resumes_with_cache = True  # at most two frames per causal convolution: a resumed decoder continues it exactly

    def __init__(self, vae: Module) -> None:
        self.vae = vae

    def modules(self) -> tuple[Module, ...]:
        return (self.vae,)

    def run(self, ctx: StageContext) -> None:
        _, dtype = device_and_dtype(self.vae)
        vae = self.vae.network_as(AutoencoderKLWan)
        if ctx.cache is None:
            ctx.cache = DecoderCache.for_vae(vae)
        video = decode(vae, ctx["latents"].to(dtype), ctx.cache)
        ctx["frames"] = video_to_frames(video.float())
