"""Init stages: the reference image as the sink sees it (its latent and the motion latents), and the prompt.

As in the reference's real-time (multi-GPU) pipeline: the reference latent is
the encoding of the image alone, the motion latents that of 73 copies of it.
"""

from __future__ import annotations

from diffusers.models.autoencoders.autoencoder_kl_wan import AutoencoderKLWan

from avatarstream.components.wan.text_encoder import TextEncoder
from avatarstream.components.wan.vae import encode
from avatarstream.models.liveavatar.config import MOTION_FRAMES
from avatarstream.pipeline.stage import Stage
from avatarstream.pipeline.state import StageContext
from avatarstream.runtime.module import Module
from avatarstream.stages.common import device_and_dtype, image_to_video_tensor


class LiveAvatarReferenceStage(Stage):
    """The image's latent and the motion latents of 73 copies of it."""

    name = "reference_encode"
    phase = "init"
    reads = ("reference_image",)
    writes = ("reference_pixels", "reference_latent", "motion_latents")

    def __init__(self, vae: Module) -> None:
        self.vae = vae

    def modules(self) -> tuple[Module, ...]:
        return (self.vae,)

    def run(self, ctx: StageContext) -> None:
        device, dtype = device_and_dtype(self.vae)
        vae = self.vae.network_as(AutoencoderKLWan)
        pixels = image_to_video_tensor(ctx["reference_image"], device).to(dtype)
        ctx["reference_pixels"] = pixels
        ctx["reference_latent"] = encode(vae, pixels)
        ctx["motion_latents"] = encode(vae, pixels.expand(-1, -1, MOTION_FRAMES, -1, -1))


class LiveAvatarPromptStage(Stage):
    """The prompt's umT5 embedding (unpadded; the DiT pads it); no negative prompt: the distilled model runs without guidance."""

    name = "prompt_encode"
    phase = "init"
    reads = ("prompt",)
    writes = ("text_context",)

    def __init__(self, text_encoder: Module, umt5: TextEncoder) -> None:
        self.text_encoder = text_encoder
        self.umt5 = umt5

    def modules(self) -> tuple[Module, ...]:
        return (self.text_encoder,)

    def run(self, ctx: StageContext) -> None:
        ctx["text_context"] = self.umt5.encode([ctx["prompt"]])[0][None]
