"""The held-nearest upscaler's stage: frames wait in its cache until ``lead`` are in, then go out ``group`` at a time."""

from __future__ import annotations

import torch

from avatarstream.plugin import Stage, StageContext


class HeldNearestStage(Stage):
    name = "held_nearest"
    phase = "final"
    reads = ("frames",)
    writes = ("frames",)
    holds_frames = True

    def __init__(self, scale: int, lead: int, group: int) -> None:
        self.scale, self.lead, self.group = scale, lead, group

    def run(self, ctx: StageContext) -> None:
        frames = torch.as_tensor(ctx["frames"])
        held, started = ctx.cache if ctx.cache is not None else (frames[:0], False)
        held = torch.cat([held, frames])
        ready = 0
        if not started and held.shape[0] >= self.lead:
            ready, started = self.lead, True
        if started:
            ready += (held.shape[0] - ready) // self.group * self.group
        ctx.cache = (held[ready:].clone(), started)  # at most lead + group frames wait here
        ctx["frames"] = self._upscaled(held[:ready])

    def flush(self, ctx: StageContext) -> None:
        held, _ = ctx.cache  # the loop flushes only a run that gave it frames
        ctx.cache = None
        ctx["frames"] = self._upscaled(held)

    def _upscaled(self, frames: torch.Tensor) -> torch.Tensor:
        return frames.repeat_interleave(self.scale, dim=1).repeat_interleave(self.scale, dim=2)
