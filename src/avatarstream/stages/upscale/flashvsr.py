"""Final stage of the ``flashvsr`` upscaler: the family's frames through one FlashVSR stream per session.

The stream (``models/flashvsr/stream.py``) gives its first frames once 25 are
in and then 8 for every 8, so the stage holds frames back (``holds_frames``)
and gives the rest out when the run ends (``flush``). Its noise is drawn per
latent frame from the session's seed, so the same seed gives the same video
however the family's frames were cut into pieces.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from avatarstream.models.flashvsr.settings import StreamSettings
from avatarstream.models.flashvsr.stream import FlashVSRStream, Networks
from avatarstream.pipeline.stage import Stage
from avatarstream.pipeline.state import StageContext
from avatarstream.runtime.module import Module
from avatarstream.stages.common import device_and_dtype
from avatarstream.stages.seeding import seeded_noise


class FlashVSRStage(Stage):
    name = "flashvsr"
    phase = "final"
    reads = ("frames",)
    writes = ("frames",)
    holds_frames = True

    def __init__(self, dit: Module, lq_proj: Module, decoder: Module, networks: Networks, settings: StreamSettings, latent_frame: tuple[int, ...]) -> None:
        """``latent_frame``: the shape of one latent frame's noise, [1, channels, 1, H/8, W/8] at the output size."""
        self.dit, self.lq_proj, self.decoder = dit, lq_proj, decoder
        self.networks, self.settings, self.latent_frame = networks, settings, latent_frame

    def modules(self) -> tuple[Module, ...]:
        return (self.dit, self.lq_proj, self.decoder)

    def run(self, ctx: StageContext) -> None:
        stream = ctx.cache if ctx.cache is not None else self._stream(ctx.seed)
        ctx.cache = stream
        ctx["frames"] = stream.push(torch.as_tensor(ctx["frames"]))

    def flush(self, ctx: StageContext) -> None:
        stream: FlashVSRStream = ctx.cache
        ctx.cache = None  # the session's stream is done: its cache and frames go with it
        ctx["frames"] = stream.finish()

    def _stream(self, seed: int) -> FlashVSRStream:
        device, dtype = device_and_dtype(self.dit)
        s = self.settings
        return FlashVSRStream(
            self.networks, noise=_noise(seed, device, self.latent_frame), sparse_ratio=s.sparse_ratio, local_range=s.local_range, kv_ratio=s.kv_ratio,
            color_fix=s.color_fix, device=device, dtype=dtype,
        )  # fmt: skip


def _noise(seed: int, device: torch.device, shape: tuple[int, ...]) -> Callable[[int, int], torch.Tensor]:
    """Noise latents drawn one latent frame at a time from the session's seed: the same frame gets the same noise always."""

    def draw(first: int, count: int) -> torch.Tensor:
        return torch.cat([seeded_noise(shape, device, seed, "flashvsr", first + i) for i in range(count)], dim=2)

    return draw
