"""The interface every model family offers; ``cli/``, ``serve/``, ``fleet/``, ``api.py`` and the benchmarks use nothing else.

A family class is registered by name (``families/registry.py``). It declares
its options (``Options``, a ``FamilyOptions`` dataclass), loads its modules
from a weights folder as the user downloaded it (``load``), and describes the
pipeline that options make (``build`` returns a ``PipelineSpec``: its stages,
chunk plan, rates and output size); ``families.assemble.build_pipeline`` puts
the runtime under it. Nothing a family holds depends on its last build.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from avatarstream.families.options import FamilyOptions

if TYPE_CHECKING:  # the registry imports this module to list families: it must not load torch
    import numpy as np
    import torch

    from avatarstream.pipeline.spec import PipelineSpec
    from avatarstream.runtime.module import Module

OptionsLike = FamilyOptions | Mapping[str, Any] | None


class Family(Protocol):
    name: str
    weights: str  # where the weights came from, for reports
    modules: dict[str, Module]

    @property
    def Options(self) -> type[FamilyOptions]:
        """The family's options dataclass."""
        ...

    @property
    def fps(self) -> int: ...

    def build(self, options: FamilyOptions) -> PipelineSpec:
        """The pipeline ``options`` make, as a spec (its ``frame_size`` and ``settings`` are what reports show)."""
        ...

    def reference(self, path: Path | None, options: OptionsLike = None) -> np.ndarray:
        """uint8 RGB [height, width, 3]: the reference image (or the family's default) as the pipeline ``options`` build takes
        it; its size is the video's."""
        ...


class FamilyClass(Protocol):
    """What the registry needs of a family's class before anything is loaded."""

    Options: type[FamilyOptions]
    summary: ClassVar[str]  # one line: what it is
    weights_help: ClassVar[str]  # one line: which weights it needs (what --weights names)

    def load(self, weights: Path | None, options: FamilyOptions, *, device: torch.device, seed: int = 0) -> Family: ...
