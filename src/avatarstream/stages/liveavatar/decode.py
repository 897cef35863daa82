"""Final stage: the Wan VAE's causal decoder, one block at a time (12 frames per 3-latent-frame block).

As the reference's real-time pipeline does, the decoder is first warmed up
with the first 7 motion latents, and the first 3 frames of the first block
are dropped (so the first block gives 9 frames, every later one 12); from
then on it continues block by block, so every block's frames go out as soon
as the block exists.
"""

from __future__ import annotations

from diffusers.models.autoencoders.autoencoder_kl_wan import AutoencoderKLWan

from avatarstream.models.infinitetalk.vae import DecoderCache, decode
from avatarstream.pipeline.stage import Stage
from avatarstream.pipeline.state import StageContext
from avatarstream.runtime.module import Module
from avatarstream.stages.common import device_and_dtype, video_to_frames

#: Motion latents the decoder sees before the first block, and the frames of that block it then drops (the reference's).
WARMUP_LATENTS = 7
FIRST_BLOCK_DROP = 3


class LiveAvatarDecodeStage(Stage):
    name = "decode"
    phase = "final"
    reads = ("latents", "motion_latents")
    writes = ("frames",)
    resumes_with_cache = True  # at most two frames per causal convolution: a resumed decoder continues it exactly

    def __init__(self, vae: Module) -> None:
        self.vae = vae

    def modules(self) -> tuple[Module, ...]:
        return (self.vae,)

    def run(self, ctx: StageContext) -> None:
        device, dtype = device_and_dtype(self.vae)
        vae = self.vae.network_as(AutoencoderKLWan)
        if ctx.cache is None:
            ctx.cache = DecoderCache.for_vae(vae)
            decode(vae, ctx["motion_latents"][:, :, :WARMUP_LATENTS].to(device, dtype), ctx.cache)
            video = decode(vae, ctx["latents"].to(device, dtype), ctx.cache)[:, :, FIRST_BLOCK_DROP:]
        else:
            video = decode(vae, ctx["latents"].to(device, dtype), ctx.cache)
        ctx["frames"] = video_to_frames(video.float()).numpy()
