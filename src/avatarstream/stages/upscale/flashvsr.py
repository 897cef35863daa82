"""Final stage of the ``flashvsr`` upscaler: the family's frames through one FlashVSR stream per session.

The stream (``models/flashvsr/stream.py``) gives its first frames once 25 are
in and then 8 for every 8, so the stage holds frames back (``holds_frames``)
and gives the rest out when the run ends (``flush``). Its noise is drawn per
latent frame from the session's seed (``session_noise``), so the same seed
gives the same video however the family's frames were cut into pieces.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from avatarstream.models.flashvsr.stream import FlashVSRStream
from avatarstream.pipeline.stage import Stage
from avatarstream.pipeline.state import StageContext
from avatarstream.runtime.module import Module
from avatarstream.stages.seeding import seeded_noise


class FlashVSRStage(Stage):
    name = "flashvsr"
    phase = "final"
    reads = ("frames",)
    writes = ("frames",)
    holds_frames = True

    def __init__(self, modules: tuple[Module, ...], open_stream: Callable[[int], FlashVSRStream]) -> None:
        """``open_stream(seed)``: a session's stream, opened on its first frames (where the modules are then)."""
        self._modules, self.open_stream = modules, open_stream

    def modules(self) -> tuple[Module, ...]:
        return self._modules

    def run(self, ctx: StageContext) -> None:
        stream = ctx.cache if ctx.cache is not None else self.open_stream(ctx.seed)
        ctx.cache = stream
        ctx["frames"] = stream.push(torch.as_tensor(ctx["frames"]))

    def flush(self, ctx: StageContext) -> None:
        stream: FlashVSRStream = ctx.cache
        ctx.cache = None  # the session's stream is done: its cache and frames go with it
        ctx["frames"] = stream.finish()


def session_noise(seed: int, device: torch.device, shape: tuple[int, ...]) -> Callable[[int, int], torch.Tensor]:
    """Noise latents drawn one latent frame (``shape``) at a time from the session's seed: the same frame gets the same noise always."""

    def draw(first: int, count: int) -> torch.Tensor:
        return torch.cat([seeded_noise(shape, device, seed, "flashvsr", first + i) for i in range(count)], dim=2)

    return draw
