"""The small interface every model family offers; ``cli/``, ``serve/`` and the benchmarks use nothing else.

A family holds its loaded modules and turns user options into a pipeline.
Its output size and frame rate are known once ``build`` has run (a preset
may choose the size).
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

import numpy as np
import torch

from avatarstream.families.options import GenerationOptions
from avatarstream.pipeline.pipeline import Pipeline
from avatarstream.runtime.module import Module


class Family(Protocol):
    name: str
    weights: str  # where the weights came from, for reports
    modules: dict[str, Module]

    @property
    def fps(self) -> int: ...

    @property
    def frame_size(self) -> tuple[int, int]:
        """(width, height) of the video the last ``build`` makes."""
        ...

    @property
    def settings(self) -> dict[str, object]:
        """Every generation setting of the last ``build`` (its defaults before one), for reports."""
        ...

    def build(
        self, device: torch.device, options: GenerationOptions, *, residency: dict[str, str] | None = None, overlap: bool = False, read_ahead: bool = False
    ) -> Pipeline: ...

    def reference(self, path: Path | None, avatar: int | None) -> np.ndarray:
        """uint8 RGB [height, width, 3]: the reference image (or the family's default) as the pipeline takes it."""
        ...
