"""``colourbars``: a family outside avatarstream, plugged in through the ``avatarstream.families`` entry point.

It has one network (``Painter``), its own option (``--bars``), a block-causal
chunk plan (back-to-back blocks, no I-chunks) and a stage whose cache it
resumes itself, and nothing outside this package names it. This module stays
light (no torch at import): the registry imports it to list the family and to
check a weights folder; the network, stages and strategy load in ``load`` and
``build``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from avatarstream.plugin import FamilyOptions, InputError
from avatarstream_colourbars.options import DEFAULT_BARS, ColourBarsOptions

if TYPE_CHECKING:
    import numpy as np
    import torch

    from avatarstream.plugin import Module, PipelineSpec

FPS = 25
SAMPLE_RATE = 16000
SIZE = (64, 48)  # (width, height)
BLOCK_FRAMES = 12
WEIGHTS_FILE = "painter.safetensors"


@dataclass
class ColourBarsFamily:
    modules: dict[str, Module]
    weights: str

    name = "colourbars"
    fps = FPS
    Options: ClassVar[type[ColourBarsOptions]] = ColourBarsOptions
    summary: ClassVar[str] = "colour bars that pulse with the audio: the plug-in seam's test family"
    weights_help: ClassVar[str] = f"none (random weights drawn from the seed), or a folder holding {WEIGHTS_FILE}"

    @staticmethod
    def check_weights(weights: Path | None, options: ColourBarsOptions) -> None:
        if weights is not None and not (weights / WEIGHTS_FILE).is_file():
            raise InputError(f"no {WEIGHTS_FILE} in {weights}; the colourbars model's weights folder holds that one file")

    @classmethod
    def load(cls, weights: Path | None, options: ColourBarsOptions, *, device: torch.device, seed: int = 0) -> ColourBarsFamily:
        cls.check_weights(weights, options)
        from avatarstream.plugin import Module
        from avatarstream_colourbars.network import Painter

        painter = Module.build("painter", Painter, weights=weights / WEIGHTS_FILE if weights is not None else None, seed=seed)
        return cls({"painter": painter}, str(weights) if weights is not None else f"random (seed {seed})")

    def build(self, options: ColourBarsOptions) -> PipelineSpec:
        from avatarstream.plugin import BlockPlan, PipelineSpec
        from avatarstream_colourbars.network import LATENT_STRIDE
        from avatarstream_colourbars.stages import BarsStage, PixelsStage, TintStage
        from avatarstream_colourbars.strategy import PaintsFrames

        bars = options.bars or DEFAULT_BARS
        width, height = SIZE
        frames = PaintsFrames()  # what --parallel frames=N splits
        stages = [
            TintStage(),
            BarsStage(self.modules["painter"], frames, bars, (height // LATENT_STRIDE, width // LATENT_STRIDE), SAMPLE_RATE // FPS),
            PixelsStage(),
        ]
        settings = {"bars": bars, "block_frames": BLOCK_FRAMES}
        return PipelineSpec(stages, BlockPlan(BLOCK_FRAMES), FPS, SAMPLE_RATE, SIZE, settings, parallel={"frames": [frames]})

    def reference(self, path: Path | None, options: FamilyOptions | Mapping[str, Any] | None = None) -> np.ndarray:
        from avatarstream.plugin import DEFAULT_REFERENCE, load_reference_image

        return load_reference_image(path if path is not None else DEFAULT_REFERENCE, SIZE)
