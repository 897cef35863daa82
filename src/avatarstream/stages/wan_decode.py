"""Final stage Decode: the Wan VAE's causal decoder over the published timeline, its cache owned by the session.

Every Wan-based family decodes its latents this way, chunk after chunk or
block after block, each continuing the last's cache; a family subclasses it
where its first chunk differs (a warm-up, frames dropped).
"""

from __future__ import annotations

from typing import ClassVar

from diffusers.models.autoencoders.autoencoder_kl_wan import AutoencoderKLWan

from avatarstream.components.wan.color_match import match_colors
from avatarstream.components.wan.vae import DecoderCache, decode
from avatarstream.pipeline.stage import Stage
from avatarstream.pipeline.state import StageContext
from avatarstream.runtime.module import Module
from avatarstream.stages.common import device_and_dtype, video_to_frames


class WanDecodeStage(Stage):
    """Each chunk's latents decoded continuing the session's cache, optionally colour-corrected towards the reference image."""

    name = "decode"
    phase = "final"
    reads: ClassVar[tuple[str, ...]] = ("latents", "reference_pixels")  # a family's decoder may read more (liveavatar: its warm-up latents)
    writes = ("frames",)
    resumes_with_cache = True  # at most two frames per causal convolution: a resumed decoder continues it exactly

    def __init__(self, vae: Module, strength: float = 0.0) -> None:
        self.vae = vae
        self.strength = strength  # colour correction towards the reference image, frame by frame (0: none)

    def modules(self) -> tuple[Module, ...]:
        return (self.vae,)

    def run(self, ctx: StageContext) -> None:
        _, dtype = device_and_dtype(self.vae)
        vae = self.vae.network_as(AutoencoderKLWan)
        if ctx.cache is None:
            ctx.cache = DecoderCache.for_vae(vae)
        video = decode(vae, ctx["latents"].to(dtype), ctx.cache).float()
        if self.strength:
            video = match_colors(video, ctx["reference_pixels"], self.strength)
        ctx["frames"] = video_to_frames(video)
