"""Chunk stage: one causal block, 4 Euler steps, each against its own rolling KV cache, all sharing the attention sink.

The stage cache holds everything a block needs from the past: the step
caches, the sink and the embedded prompt, all fixed in size. As in the
reference's single-GPU loop, the sink is prefilled before the first block
from the reference image and its motion latents, and once more when the
first clip (``cache_blocks`` blocks) is done, from the first generated latent
frame and the re-encoded last frames of that clip.

The sink's temporal offset for every call comes from the session's seed (the
reference draws it from Python's unseeded ``random``), or from a given list.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import torch
from diffusers.models.autoencoders.autoencoder_kl_wan import AutoencoderKLWan

from avatarstream.models.infinitetalk.vae import DecoderCache, decode
from avatarstream.models.liveavatar.caches import SinkCache, StepCache
from avatarstream.models.liveavatar.config import MOTION_FRAMES, SINK_OFFSET_RANGE, StreamGeometry
from avatarstream.models.liveavatar.dit import S2VDiT
from avatarstream.models.liveavatar.motion import encode_motion, warm_decoder
from avatarstream.models.liveavatar.sampler import Schedule, denoise_block
from avatarstream.pipeline.chunks import Chunk
from avatarstream.pipeline.stage import Stage
from avatarstream.pipeline.state import StageContext
from avatarstream.runtime.module import Module
from avatarstream.stages.common import device_and_dtype
from avatarstream.stages.seeding import derived_seed

#: The reference drops the first 3 decoded frames of its first clip before re-encoding the motion frames.
FIRST_CLIP_DROP = 3


def sink_offsets(seed: int, block: int, steps: int, given: Sequence[int] = ()) -> list[int]:
    """The sink offset of each step of ``block``: from ``given`` in call order (cycled), else drawn from the seed."""
    if given:
        return [given[(block * steps + i) % len(given)] for i in range(steps)]
    low, high = SINK_OFFSET_RANGE
    generator = torch.Generator().manual_seed(derived_seed(seed, "sink offsets", block))
    return [int(v) for v in torch.randint(low, high + 1, (steps,), generator=generator)]


@dataclass
class BlockState:
    """One session's memory of the stream: fixed-size caches, plus the first clip's latents until the sink is refreshed."""

    context: torch.Tensor
    caches: list[StepCache]
    sink: SinkCache
    first_clip: list[torch.Tensor] = field(default_factory=list)
    refreshed: bool = False

    def nbytes(self) -> int:
        return sum(c.nbytes() for c in self.caches) + self.sink.nbytes()


class LiveAvatarBlockStage(Stage):
    name = "audio_to_video"
    role = "generate"
    phase = "chunk"
    reads = ("chunk", "audio_features", "noise", "text_context", "reference_pixels", "reference_latent", "motion_latents")
    writes = ("latents",)

    def __init__(self, dit: Module, vae: Module, schedule: Schedule, geometry: StreamGeometry, *, start_position: int = 0, offsets: Sequence[int] = ()) -> None:
        self.dit = dit
        self.vae = vae
        self.schedule = schedule
        self.geometry = geometry
        self.start_position = start_position
        self.offsets = tuple(offsets)

    def modules(self) -> tuple[Module, ...]:
        return (self.dit, self.vae)  # the VAE re-encodes the first clip's frames for the sink refresh

    def _start(self, ctx: StageContext, dit: S2VDiT, device: torch.device, dtype: torch.dtype) -> BlockState:
        context = dit.embed_text(ctx["text_context"].to(device))
        c = dit.config
        rows = self.geometry.cache_rows
        caches = [StepCache.empty(c.num_layers, 1, rows, c.num_heads, c.head_dim, dtype, device) for _ in range(self.schedule.steps)]
        sink = dit.prefill_sink(ctx["reference_latent"].to(device, dtype), ctx["motion_latents"].to(device, dtype), context)
        return BlockState(context, caches, sink)

    def _refresh_sink(self, ctx: StageContext, state: BlockState, dit: S2VDiT, dtype: torch.dtype) -> None:
        """The reference's second prefill: the first generated frame as the reference, the clip's last frames as motion."""
        vae = self.vae.network_as(AutoencoderKLWan)
        cache = DecoderCache.for_vae(vae)
        motion = ctx["motion_latents"].to(dtype)
        warm_decoder(vae, motion, cache)
        pixels = decode(vae, torch.cat(state.first_clip, dim=2).to(dtype), cache)[:, :, FIRST_CLIP_DROP:]
        tail = pixels[:, :, -min(MOTION_FRAMES, pixels.shape[2]) :]
        new_motion = encode_motion(vae, ctx["reference_pixels"].to(dtype), tail)
        state.sink = dit.prefill_sink(state.first_clip[0][:, :, :1], new_motion, state.context)
        state.first_clip.clear()
        state.refreshed = True

    def run(self, ctx: StageContext) -> None:
        chunk: Chunk = ctx["chunk"]
        device, dtype = device_and_dtype(self.dit)
        dit = self.dit.network_as(S2VDiT)
        state: BlockState | None = ctx.cache
        if state is None:
            state = ctx.cache = self._start(ctx, dit, device, dtype)
            state.refreshed = chunk.index > 0  # a resumed session starts from the first sink and keeps it
        if not state.refreshed and len(state.first_clip) == self.geometry.cache_blocks:
            self._refresh_sink(ctx, state, dit, dtype)
        offsets = sink_offsets(ctx.seed, chunk.index, self.schedule.steps, self.offsets)
        position = self.start_position + chunk.window_start
        noise = ctx["noise"].to(device, dtype)
        audio = ctx["audio_features"].to(device)
        latents = denoise_block(dit, noise, self.schedule, state.context, audio, state.caches, state.sink, position, offsets)
        if not state.refreshed:
            state.first_clip.append(latents)
        ctx["latents"] = latents
