"""Chunk stage A2V: flow-matching Euler with the reference's time shift and guidance, motion frames held clean.

N0 is conditioned on the reference image's latent (its first frame); every
later N-chunk on the motion frames of the previous one, either re-encoded
from their decoded pixels, close to what the reference does (``reencode``), or handed over
as latents (cheaper). I-chunks hold both anchors clean and mark them in the
frame-mask channels of ``y`` (experimental: the public weights were not
trained with an end anchor).
"""

from __future__ import annotations

import torch
from diffusers.models.autoencoders.autoencoder_kl_wan import AutoencoderKLWan

from avatarstream.components.wan.vae import DecoderCache, decode, encode
from avatarstream.errors import InputError
from avatarstream.models.infinitetalk.dit import InfiniteTalkDiT
from avatarstream.models.infinitetalk.predict import ChunkConditions, DiTPredictor
from avatarstream.models.infinitetalk.sampler import Guidance, sample
from avatarstream.pipeline.chunks import Chunk, FrameLayout
from avatarstream.pipeline.stage import Stage
from avatarstream.pipeline.state import StageContext
from avatarstream.runtime.devices import upload
from avatarstream.runtime.module import Module
from avatarstream.runtime.parallel.guidance import GuidedPredictions
from avatarstream.stages.common import device_and_dtype
from avatarstream.stages.infinitetalk.decode import decode_window
from avatarstream.stages.infinitetalk.reference import conditioning_channels

READS = (
    "chunk",
    "audio_windows",
    "noise",
    "conditioning",
    "reference_latent",
    "reference_y",
    "reference_pixels",
    "clip_features",
    "text_context",
    "text_context_null",
)


def reencode_motion(vae: AutoencoderKLWan, latents: torch.Tensor, chunk: Chunk) -> torch.Tensor:
    """Motion latents re-encoded from pixels: decode the motion latents alone (fresh cache), encode again.

    An approximation of the reference, which decodes the whole previous chunk
    and encodes its last pixels: decoding only the motion latents makes their
    first one an image frame, so the result differs (by up to 0.4 on the golden
    set, mean 0.05) but costs one small decode instead of a chunk's.
    Consecutive motion frames decode together; I-chunk anchors one by one.
    """
    groups = [latents] if chunk.kind == "N" else list(latents.split(1, dim=2))
    return torch.cat([encode(vae, decode(vae, group, DecoderCache.for_vae(vae))) for group in groups], dim=2)


class WanAudioToVideoStage(Stage):
    name = "audio_to_video"
    role = "generate"
    phase = "chunk"
    reads = READS
    writes = ("latents",)

    def __init__(
        self, dit: Module, vae: Module, frames: FrameLayout, schedule: torch.Tensor, guidance: Guidance, guided: GuidedPredictions, *, reencode: bool
    ) -> None:
        self.dit = dit
        self.vae = vae
        self.frames = frames
        self.schedule = schedule
        self.guidance = guidance
        self.guided = guided  # a step's predictions: all here, or shared by a guidance group (--parallel cfg=C)
        self.reencode = reencode
        self.batched = True  # guidance predictions stacked in one forward until that runs out of memory

    def modules(self) -> tuple[Module, ...]:
        return (self.dit, self.vae)  # the VAE re-encodes motion frames and makes the I-chunks' y

    def run(self, ctx: StageContext) -> None:
        chunk: Chunk = ctx["chunk"]
        device, dtype = device_and_dtype(self.dit)
        motion = self.motion_latents(ctx, chunk)
        y = ctx["reference_y"] if chunk.kind == "N" else self._interpolation_y(ctx, chunk, motion)
        conditions = (y, ctx["clip_features"], ctx["text_context"], ctx["text_context_null"], ctx["audio_windows"])
        cond = ChunkConditions(*(c.to(device, dtype) for c in conditions))  # the VAE and the encoders may keep another precision
        noise = ctx["noise"].to(device).float()
        predictor = DiTPredictor(self.dit.network_as(InfiniteTalkDiT), cond, batched=self.batched)

        def predict(latent: torch.Tensor, t: torch.Tensor, conditions: tuple[tuple[bool, bool], ...]) -> list[torch.Tensor]:
            return self.guided(conditions, lambda mine: predictor(latent, t, mine))

        ctx["latents"] = sample(predict, noise, motion.float().to(device), upload(self.schedule, device), self.guidance, positions=chunk.cond_positions)
        self.batched = predictor.batched

    def motion_latents(self, ctx: StageContext, chunk: Chunk) -> torch.Tensor:
        """The clean latents the chunk continues from: the reference image's for N0, else the held ones (re-encoded or not)."""
        held = ctx["conditioning"]
        if held is None:  # N0: the reference image is the first frame
            return ctx["reference_latent"]
        if not self.reencode:
            return held
        _, vae_dtype = device_and_dtype(self.vae)
        return reencode_motion(self.vae.network_as(AutoencoderKLWan), held.to(vae_dtype), chunk)

    def _interpolation_y(self, ctx: StageContext, chunk: Chunk, anchors: torch.Tensor) -> torch.Tensor:
        """``y`` of an I-chunk: the reference identity as in N-chunks, both anchors marked, the end anchor's latent in place."""
        first, end = self.frames.window_video_range(chunk.window_start, chunk.window_end)
        y = conditioning_channels(self.vae.network_as(AutoencoderKLWan), ctx["reference_pixels"], end - first, anchors=chunk.cond_positions)
        y[:, 4:, chunk.cond_positions[-1]] = anchors[:, :, -1].to(y.dtype)
        return y


class WanChunkAudioToVideoStage(WanAudioToVideoStage):
    """A2V at the reference fidelity: each chunk continues from the last frames of the previous chunk's whole decode.

    The reference decodes every chunk whole (a fresh VAE cache), colour-corrects
    it and encodes its last ``motion_frames`` frames for the next chunk. This
    stage keeps the previous chunk's latents (one chunk window) and does that
    when the next chunk starts; the decode stage decodes the same window again
    for the frames it publishes, so each chunk is decoded twice (the DiT's
    steps cost far more); the motion frames are colour-corrected twice, the others once.
    """

    def __init__(
        self,
        dit: Module,
        vae: Module,
        frames: FrameLayout,
        schedule: torch.Tensor,
        guidance: Guidance,
        guided: GuidedPredictions,
        *,
        motion_frames: int,
        strength: float,
    ) -> None:
        super().__init__(dit, vae, frames, schedule, guidance, guided, reencode=True)
        self.motion_frames = motion_frames  # video frames
        self.strength = strength

    def motion_latents(self, ctx: StageContext, chunk: Chunk) -> torch.Tensor:
        previous = ctx.cache
        if ctx["conditioning"] is None:
            return ctx["reference_latent"]
        if previous is None:
            raise InputError("the reference fidelity continues each chunk from the previous one's decode; it cannot resume a session part-way")
        vae = self.vae.network_as(AutoencoderKLWan)
        vae_device, vae_dtype = device_and_dtype(self.vae)
        video = decode_window(vae, previous.to(vae_device, vae_dtype), ctx["reference_pixels"], self.strength, slice(-self.motion_frames, None))
        return encode(vae, video.to(vae_device, vae_dtype))

    def run(self, ctx: StageContext) -> None:
        super().run(ctx)
        ctx.cache = ctx["latents"]
