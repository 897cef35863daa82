"""Chunk stage: one causal block, 4 Euler steps, each against its own rolling KV cache, all sharing the attention sink.

The stage cache holds everything a block needs from the past: the step
caches, the sink and the embedded prompt, all fixed in size. As in the
reference's real-time (multi-GPU) pipeline, the sink is prefilled before the
first block from the reference image and its motion latents, and once more
when the first clip (``cache_blocks`` blocks) is done, with the first
generated latent frame as the reference and the same motion latents.

Under ``--parallel steps=N`` each rank runs one step of every block against
the one cache it holds (the others are allocated empty), and the first
generated latent frame comes from the last step's rank. Under ``sp=S`` the
caches and the sink hold this rank's share of the heads (``cache_heads``).

The sink's temporal offset for every call comes from the session's seed (the
reference draws it from Python's unseeded ``random``), or from a given list.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from avatarstream.models.liveavatar.caches import SinkCache, StepCache
from avatarstream.models.liveavatar.config import SINK_OFFSET_RANGE, StreamGeometry
from avatarstream.models.liveavatar.dit import S2VDiT
from avatarstream.models.liveavatar.sampler import Schedule, denoise_block
from avatarstream.pipeline.chunks import Chunk
from avatarstream.pipeline.stage import Stage
from avatarstream.pipeline.state import StageContext
from avatarstream.runtime.module import Module
from avatarstream.runtime.parallel.steps import Shared, SplitsSteps
from avatarstream.stages.common import device_and_dtype
from avatarstream.stages.seeding import derived_seed


def sink_offsets(seed: int, block: int, steps: int, given: Sequence[int] = ()) -> list[int]:
    """The sink offset of each step of ``block``: from ``given`` in call order (cycled), else drawn from the seed."""
    if given:
        return [given[(block * steps + i) % len(given)] for i in range(steps)]
    low, high = SINK_OFFSET_RANGE
    generator = torch.Generator().manual_seed(derived_seed(seed, "sink offsets", block))
    return [int(v) for v in torch.randint(low, high + 1, (steps,), generator=generator)]


@dataclass
class BlockState:
    """One session's memory of the stream: fixed-size caches, and the first generated latent frame until the sink takes it."""

    context: torch.Tensor
    caches: list[StepCache]
    sink: SinkCache
    first_latent: Shared | None = None  # made by the last step (another rank's, under --parallel steps=N)
    refreshed: bool = False

    def nbytes(self) -> int:
        return sum(c.nbytes() for c in self.caches) + self.sink.nbytes()


class LiveAvatarBlockStage(Stage):
    name = "audio_to_video"
    role = "generate"
    phase = "chunk"
    reads = ("chunk", "audio_features", "noise", "text_context", "reference_latent", "motion_latents")
    writes = ("latents",)

    def __init__(
        self,
        dit: Module,
        steps: SplitsSteps,
        schedule: Schedule,
        geometry: StreamGeometry,
        *,
        start_position: int = 0,
        offsets: Sequence[int] = (),
        kv_storage: torch.dtype | None = None,
    ) -> None:
        """``kv_storage``: the dtype the caches and the sink are stored in (None: the DiT's; ``float8_e4m3fn``: fp8 with scales)."""
        self.dit = dit
        self.kv_storage = kv_storage
        self.steps = steps  # all here, or this rank's one step of every block (--parallel steps=N)
        self.schedule = schedule
        self.geometry = geometry
        self.start_position = start_position
        self.offsets = tuple(offsets)

    def modules(self) -> tuple[Module, ...]:
        return (self.dit,)

    def _start(self, ctx: StageContext, dit: S2VDiT, device: torch.device, dtype: torch.dtype) -> BlockState:
        context = dit.embed_text(ctx["text_context"].to(device))
        c = dit.config
        rows = self.geometry.cache_rows
        mine = self.steps.mine(self.schedule.steps)  # the steps this rank runs hold a cache; the others' are empty
        caches = [
            StepCache.empty(c.num_layers, 1, rows if i in mine else 0, dit.cache_heads, c.head_dim, dtype, device, self.kv_storage)
            for i in range(self.schedule.steps)
        ]
        sink = dit.prefill_sink(ctx["reference_latent"].to(device, dtype), ctx["motion_latents"].to(device, dtype), context, self.kv_storage)
        return BlockState(context, caches, sink)

    def run(self, ctx: StageContext) -> None:
        chunk: Chunk = ctx["chunk"]
        device, dtype = device_and_dtype(self.dit)
        dit = self.dit.network_as(S2VDiT)
        state: BlockState | None = ctx.cache
        if state is None:
            state = ctx.cache = self._start(ctx, dit, device, dtype)
            state.refreshed = chunk.index > 0  # a resumed session starts from the first sink and keeps it
        if not state.refreshed and chunk.index >= self.geometry.cache_blocks and state.first_latent is not None:
            state.sink = dit.prefill_sink(state.first_latent.get(), ctx["motion_latents"].to(device, dtype), state.context, self.kv_storage)
            state.first_latent, state.refreshed = None, True
        offsets = sink_offsets(ctx.seed, chunk.index, self.schedule.steps, self.offsets)
        position = self.start_position + chunk.window_start
        noise = ctx["noise"].to(device, dtype)
        audio = ctx["audio_features"].to(device)
        latents = denoise_block(dit, noise, self.schedule, state.context, audio, state.caches, state.sink, position, offsets, run_steps=self.steps)
        if state.first_latent is None and not state.refreshed:
            state.first_latent = self.steps.share(latents[:, :, :1].clone())
        ctx["latents"] = latents
