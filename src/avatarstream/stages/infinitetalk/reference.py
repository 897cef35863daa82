"""Init stages: the reference image and the prompts, encoded once per session."""

from __future__ import annotations

import torch
from diffusers.models.autoencoders.autoencoder_kl_wan import AutoencoderKLWan

from avatarstream.components.wan.config import VAE_TEMPORAL_STRIDE
from avatarstream.components.wan.text_encoder import TextEncoder
from avatarstream.components.wan.vae import encode
from avatarstream.models.infinitetalk.image_encoder import ImageEncoder
from avatarstream.pipeline.stage import Stage
from avatarstream.pipeline.state import StageContext
from avatarstream.runtime.module import Module
from avatarstream.stages.common import device_and_dtype, image_to_video_tensor


def conditioning_channels(vae: AutoencoderKLWan, image: torch.Tensor, video_frames: int, anchors: tuple[int, ...] = (0,)) -> torch.Tensor:
    """The DiT's ``y``: 4 mask channels (1 on the given latent frames) + the VAE latent of the image followed by zero frames."""
    zeros = image.new_zeros(*image.shape[:2], video_frames - 1, *image.shape[3:])
    latent = encode(vae, torch.cat([image, zeros], dim=2))
    mask = torch.zeros(latent.shape[0], VAE_TEMPORAL_STRIDE, *latent.shape[2:], dtype=latent.dtype, device=latent.device)
    mask[:, :, list(anchors)] = 1
    return torch.cat([mask, latent], dim=1)


class WanReferenceStage(Stage):
    """The reference as the model sees it: its VAE latent (N0's first frame), ``y`` for an N-chunk, CLIP features."""

    name = "reference_encode"
    phase = "init"
    reads = ("reference_image",)
    writes = ("reference_pixels", "reference_latent", "reference_y", "clip_features")

    def __init__(self, vae: Module, image_encoder: Module, clip: ImageEncoder, window_video_frames: int) -> None:
        self.vae = vae
        self.image_encoder = image_encoder  # the CLIP network, for the runtime; ``clip`` drives it
        self.clip = clip
        self.window_video_frames = window_video_frames

    def modules(self) -> tuple[Module, ...]:
        return (self.vae, self.image_encoder)

    def run(self, ctx: StageContext) -> None:
        device, dtype = device_and_dtype(self.vae)
        pixels = image_to_video_tensor(ctx["reference_image"], device).to(dtype)
        ctx["reference_pixels"] = pixels
        vae = self.vae.network_as(AutoencoderKLWan)
        ctx["reference_latent"] = encode(vae, pixels)
        ctx["reference_y"] = conditioning_channels(vae, pixels, self.window_video_frames)
        ctx["clip_features"] = self.clip.encode(pixels[:, :, 0]).to(dtype)


class WanPromptStage(Stage):
    """The prompt and the negative prompt as UMT5 token embeddings (unpadded; the DiT pads them)."""

    name = "prompt_encode"
    phase = "init"
    reads = ("prompt",)
    writes = ("text_context", "text_context_null")

    def __init__(self, text_encoder: Module, umt5: TextEncoder, negative_prompt: str) -> None:
        self.text_encoder = text_encoder  # the UMT5 network, for the runtime; ``umt5`` drives it with its tokenizer
        self.umt5 = umt5
        self.negative_prompt = negative_prompt

    def modules(self) -> tuple[Module, ...]:
        return (self.text_encoder,)

    def run(self, ctx: StageContext) -> None:
        context, null = self.umt5.encode([ctx["prompt"], self.negative_prompt])
        ctx["text_context"], ctx["text_context_null"] = context[None], null[None]
