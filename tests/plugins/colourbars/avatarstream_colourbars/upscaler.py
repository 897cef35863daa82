"""``held-nearest``: an upscaler outside avatarstream, plugged in through the ``avatarstream.upscalers`` entry point.

It repeats every pixel ``scale`` times, and gives frames out the way a
streaming super-resolution model does: nothing until ``lead`` frames are in,
then in groups of ``group`` frames, the rest at the end (``flush``). So it
proves what such a model needs of the loop (frames held back, audio kept with
them, the end flushed) with output that is easy to check.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from avatarstream.plugin import FamilyOptions, InputError, UpscaleSpec, option

if TYPE_CHECKING:
    import torch

    from avatarstream.plugin import Module

DEFAULT_LEAD = 25  # FlashVSR's: its first call needs 25 frames
GROUP = 8  # and every later one 8


@dataclass(frozen=True)
class HeldNearestOptions(FamilyOptions):
    lead: int | None = option(help=f"frames held before the first comes out ({DEFAULT_LEAD})", minimum=1, maximum=1000, metavar="N")
    scale: int | None = option(help="how many times wider and taller (2)", minimum=1, maximum=4, metavar="N")


class HeldNearestUpscaler:
    name = "held-nearest"
    weights = "none"
    Options: ClassVar[type[HeldNearestOptions]] = HeldNearestOptions
    summary: ClassVar[str] = "nearest-neighbour upscaling that holds frames back as a streaming SR model does: the seam's test upscaler"
    weights_help: ClassVar[str] = "none"

    def __init__(self) -> None:
        self.modules: dict[str, Module] = {}

    @classmethod
    def load(cls, weights: Path | None, options: FamilyOptions, *, device: torch.device, seed: int = 0) -> HeldNearestUpscaler:
        if weights is not None:
            raise InputError("held-nearest has no weights")
        return cls()

    def build(self, frame_size: tuple[int, int], fps: int, options: FamilyOptions) -> UpscaleSpec:
        from avatarstream_colourbars.held_stage import HeldNearestStage

        parsed = HeldNearestOptions.parse(options)
        lead, scale = parsed.lead or DEFAULT_LEAD, parsed.scale or 2
        width, height = frame_size
        return UpscaleSpec([HeldNearestStage(scale, lead, GROUP)], (width * scale, height * scale), {"lead": lead, "scale": scale})
