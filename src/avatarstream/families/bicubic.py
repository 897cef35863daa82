"""The ``bicubic`` upscaler: frames interpolated to a multiple of their size, with no model and no lag.

It is what a super-resolution model is measured against (`avatarstream eval` on
both), and a way to try ``--upscale`` with nothing to download.
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

import torch

from avatarstream.errors import InputError
from avatarstream.families.bicubic_options import BicubicOptions
from avatarstream.families.builtin_upscalers import BUILTIN_UPSCALERS
from avatarstream.families.options import FamilyOptions
from avatarstream.families.upscaler import UpscaleSpec
from avatarstream.runtime.module import Module
from avatarstream.stages.upscale.bicubic import BicubicStage

DEFAULT_SCALE = 4


class BicubicUpscaler:
    name = "bicubic"
    weights = "none"
    Options: ClassVar[type[BicubicOptions]] = BicubicOptions
    summary: ClassVar[str] = BUILTIN_UPSCALERS["bicubic"].summary
    weights_help: ClassVar[str] = BUILTIN_UPSCALERS["bicubic"].weights_help

    def __init__(self) -> None:
        self.modules: dict[str, Module] = {}

    @classmethod
    def load(cls, weights: Path | None, options: FamilyOptions, *, device: torch.device, seed: int = 0) -> BicubicUpscaler:
        if weights is not None:
            raise InputError("the bicubic upscaler has no weights; leave out --upscale-weights")
        return cls()

    def build(self, frame_size: tuple[int, int], fps: int, options: FamilyOptions) -> UpscaleSpec:
        scale = BicubicOptions.parse(options).scale or DEFAULT_SCALE
        width, height = frame_size
        return UpscaleSpec([BicubicStage(scale)], (width * scale, height * scale), {"scale": scale})
