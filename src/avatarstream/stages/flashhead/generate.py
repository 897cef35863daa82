"""Chunk stage: one FlashHead chunk, from noise to its new, colour-corrected frames and the next chunk's motion latents.

As the reference's stream mode: the chunk's latent starts from noise, its
first latent frames held to the motion latents (at first the reference
latent's first frame), and is denoised in a few re-noising steps; the whole
chunk is decoded, colour-corrected towards the reference image, and its last
motion frames encoded again as the next chunk's motion latents. The chunk's
first motion frames repeat the previous chunk's end and are dropped; the rest
go to the final stage. The next chunk needs this one's decoded pixels, so
decoding belongs to the chunk, not to a final stage that could overlap it.

Every draw comes from one generator per session, seeded from the run's seed
and kept on the host (a GPU run draws what a CPU run does): for Lite the
reference latent's posterior sample first, then per chunk the noise, one eps
per step, and (Lite) the motion latents' sample. Pro's encodes draw nothing,
so its draws are the reference's exactly (noise, eps_0..eps_n-1 per chunk).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from avatarstream.models.flashhead.color import correct_colors
from avatarstream.models.flashhead.dit import FlashHeadDiT
from avatarstream.models.flashhead.sampler import denoise
from avatarstream.models.flashhead.vae import LtxVideoVAE, WanVideoVAE
from avatarstream.pipeline.stage import Stage
from avatarstream.pipeline.state import StageContext
from avatarstream.runtime.devices import upload
from avatarstream.runtime.module import Module
from avatarstream.stages.common import device_and_dtype


@dataclass(frozen=True)
class ChunkSettings:
    chunk_frames: int  # video frames one DiT call makes
    motion_frames: int  # of them, the first ones that repeat the previous chunk (dropped)
    motion_latents: int
    latent_shape: tuple[int, int, int, int]  # (channels, frames, h, w) of a chunk's latent
    schedule: torch.Tensor  # timesteps, from ``sampler.timesteps``
    color_correction: float


@dataclass
class ChunkState:
    """One session's memory of the stream: its generator, the reference (pixels and latent) and the motion latents; fixed in size."""

    generator: torch.Generator
    pixels: torch.Tensor  # [1, 3, 1, H, W] on the device
    reference: torch.Tensor  # [C, T, h, w]
    motion: torch.Tensor  # [C, n, h, w]


class FlashHeadChunkStage(Stage):
    name = "audio_to_video"
    role = "generate"
    phase = "chunk"
    reads = ("chunk", "audio_windows", "reference_pixels")
    writes = ("latents",)

    def __init__(self, dit: Module, vae: Module, settings: ChunkSettings) -> None:
        self.dit = dit
        self.vae = vae
        self.settings = settings

    def modules(self) -> tuple[Module, ...]:
        return (self.dit, self.vae)

    def _vae(self) -> WanVideoVAE | LtxVideoVAE:
        network = self.vae.network
        assert isinstance(network, (WanVideoVAE, LtxVideoVAE))
        return network

    def _start(self, ctx: StageContext, device: torch.device, dtype: torch.dtype) -> ChunkState:
        generator = torch.Generator().manual_seed(ctx.seed)
        pixels = ctx["reference_pixels"].to(device)
        still = pixels.to(dtype).expand(-1, -1, self.settings.chunk_frames, -1, -1)
        reference = self._vae().encode(still, generator)[0]
        return ChunkState(generator, pixels, reference, reference[:, :1].clone())

    def run(self, ctx: StageContext) -> None:
        device, dtype = device_and_dtype(self.dit)
        state: ChunkState | None = ctx.cache
        if state is None:
            state = ctx.cache = self._start(ctx, device, dtype)
        s = self.settings

        def draw(shape: tuple[int, ...]) -> torch.Tensor:
            return upload(torch.randn(shape, generator=state.generator), device, dtype)

        noise = draw(s.latent_shape)
        latents = denoise(self.dit.network_as(FlashHeadDiT), noise, state.motion, state.reference, ctx["audio_windows"].to(device), s.schedule, draw)
        vae = self._vae()
        video = correct_colors(vae.decode(latents[None]).float(), state.pixels, s.color_correction)
        state.motion = vae.encode(video[:, :, -s.motion_frames :].to(dtype), state.generator)[0]
        ctx["latents"] = video[:, :, s.motion_frames :]

    def resume_state(self, cache: Any) -> Any:
        """The generator's state and the latents: a resumed session draws and continues exactly as this one would."""
        if cache is None:
            return None
        return {"generator": cache.generator.get_state(), "pixels": cache.pixels, "reference": cache.reference, "motion": cache.motion}

    def restore_cache(self, saved: Any) -> Any:
        generator = torch.Generator()
        generator.set_state(saved["generator"].cpu())
        return ChunkState(generator, saved["pixels"], saved["reference"], saved["motion"])
