"""Init stage: encode the reference once into everything the chunk loop conditions on."""

from __future__ import annotations

import torch.nn.functional as F

from avatarstream.models.demo import CausalVAE
from avatarstream.pipeline.stage import Stage
from avatarstream.pipeline.state import StageContext
from avatarstream.runtime.module import Module
from avatarstream.stages.common import image_to_video_tensor


class ReferenceEncodeStage(Stage):
    """VAE-encodes the reference at output and base resolution and turns it into reference tokens.

    Writes ``reference_latent`` (base resolution, the A2V model's motion frames
    for the very first chunk), ``reference_latent_full`` (what SR looks at for
    identity) and ``reference_tokens`` (rich tokens the A2V model attends to).
    """

    name = "reference_encode"
    phase = "init"
    reads = ("reference_image",)
    writes = ("reference_latent", "reference_latent_full", "reference_tokens")

    def __init__(self, vae: Module, reference_encoder: Module, base_size: int) -> None:
        self.vae = vae
        self.reference_encoder = reference_encoder
        self.base_size = base_size

    def modules(self) -> tuple[Module, ...]:
        return (self.vae, self.reference_encoder)

    def run(self, ctx: StageContext) -> None:
        device = next(self.vae.network.parameters()).device
        full = image_to_video_tensor(ctx["reference_image"], device)
        base = F.interpolate(full[:, :, 0], size=(self.base_size, self.base_size), mode="area")[:, :, None]
        vae = self.vae.network_as(CausalVAE)
        full_latent = vae.encode(full)[:, :, 0]
        base_latent = vae.encode(base)[:, :, 0]
        ctx["reference_latent"] = base_latent
        ctx["reference_latent_full"] = full_latent
        ctx["reference_tokens"] = self.reference_encoder.network(base_latent)
