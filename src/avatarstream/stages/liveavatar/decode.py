"""Final stage: the Wan VAE's causal decoder, one block at a time (12 frames per 3-latent-frame block).

As the reference's real-time pipeline does, the decoder is first warmed up
with the first 7 motion latents, and the first 3 frames of the first block
are dropped (so the first block gives 9 frames, every later one 12); from
then on it continues block by block, so every block's frames go out as soon
as the block exists.
"""

from __future__ import annotations

from typing import ClassVar

from diffusers.models.autoencoders.autoencoder_kl_wan import AutoencoderKLWan

from avatarstream.components.wan.vae import DecoderCache, decode
from avatarstream.pipeline.state import StageContext
from avatarstream.stages.common import device_and_dtype, video_to_frames
from avatarstream.stages.wan_decode import WanDecodeStage

#: Motion latents the decoder sees before the first block, and the frames of that block it then drops (the reference's).
WARMUP_LATENTS = 7
FIRST_BLOCK_DROP = 3


class LiveAvatarDecodeStage(WanDecodeStage):
    reads: ClassVar[tuple[str, ...]] = ("latents", "motion_latents")

    def run(self, ctx: StageContext) -> None:
        if ctx.cache is not None:
            super().run(ctx)
            return
        device, dtype = device_and_dtype(self.vae)
        vae = self.vae.network_as(AutoencoderKLWan)
        ctx.cache = DecoderCache.for_vae(vae)
        decode(vae, ctx["motion_latents"][:, :, :WARMUP_LATENTS].to(device, dtype), ctx.cache)
        video = decode(vae, ctx["latents"].to(device, dtype), ctx.cache)[:, :, FIRST_BLOCK_DROP:]
        ctx["frames"] = video_to_frames(video.float())
