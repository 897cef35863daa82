"""Upscalers: the second plug-in kind, a super-resolution stage that runs after any family's decode (DESIGN.md §9).

An upscaler is registered like a family (``registry.UPSCALERS``: built-in ones in
``builtin_upscalers.py``, others under the entry-point group
``avatarstream.upscalers``), declares its options the same way, and loads its
modules from a weights folder as downloaded. Given the frame size and rate a
family's pipeline makes, it says which final stages to append and the frame
size that comes out (``UpscaleSpec``). A ``Cascade`` is a family followed by an
upscaler: itself a family, so every command, the server and the API run it
unchanged, and its modules share the runtime's residency policies with the
family's (the hand-over from the base DiT to the SR DiT is the runtime's).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, Protocol

from avatarstream.errors import PipelineGraphError
from avatarstream.families.base import Family, OptionsLike, model_warnings
from avatarstream.families.options import FamilyOptions

if TYPE_CHECKING:
    import numpy as np
    import torch

    from avatarstream.pipeline.spec import PipelineSpec
    from avatarstream.pipeline.stage import Stage
    from avatarstream.runtime.module import Module


@dataclass(frozen=True)
class UpscaleSpec:
    """What an upscaler appends to a family's pipeline: final stages (reading ``frames``, writing the upscaled ``frames``;
    the last may hold frames back, ``Stage.holds_frames``), the frame size they make, and their settings for reports."""

    stages: Sequence[Stage]
    frame_size: tuple[int, int]  # (width, height)
    settings: Mapping[str, object] = field(default_factory=dict)


class Upscaler(Protocol):
    """A loaded upscaler: its modules (named after it, apart from any family's: ``flashvsr_dit``) and the stages it appends."""

    name: str
    weights: str  # where its weights came from, for reports
    modules: dict[str, Module]

    def build(self, frame_size: tuple[int, int], fps: int, options: FamilyOptions) -> UpscaleSpec:
        """The stages that upscale frames of ``frame_size`` (width, height) at ``fps``, as ``options`` set them."""
        ...


class UpscalerClass(Protocol):
    """What the registry needs of an upscaler's class before anything is loaded (as ``base.FamilyClass``)."""

    Options: type[FamilyOptions]
    summary: ClassVar[str]
    weights_help: ClassVar[str]

    def load(self, weights: Path | None, options: FamilyOptions, *, device: torch.device, seed: int = 0) -> Upscaler: ...


@dataclass
class Cascade:
    """A family whose frames go through an upscaler: the family's options, reference and rates, the upscaled size."""

    base: Family
    upscaler: Upscaler
    upscale_options: FamilyOptions
    modules: dict[str, Module] = field(init=False)
    name: str = field(init=False)
    weights: str = field(init=False)  # both models' weights, for reports

    def __post_init__(self) -> None:
        clash = sorted(set(self.base.modules) & set(self.upscaler.modules))
        if clash:
            raise PipelineGraphError(
                f"the upscaler {self.upscaler.name!r} names its modules {clash} as the {self.base.name} model does; an upscaler's modules need names of their own (its name first: flashvsr_dit)"
            )
        self.modules = {**self.base.modules, **self.upscaler.modules}
        self.name = self.base.name
        self.weights = f"{self.base.weights}; upscaled by {self.upscaler.name} ({self.upscaler.weights})"

    @property
    def Options(self) -> type[FamilyOptions]:
        return self.base.Options

    @property
    def fps(self) -> int:
        return self.base.fps

    @property
    def warnings(self) -> list[str]:
        return model_warnings(self.base) + model_warnings(self.upscaler)

    def build(self, options: FamilyOptions) -> PipelineSpec:
        spec = self.base.build(options)
        upscale = self.upscaler.build(spec.frame_size, spec.fps, self.upscale_options)
        settings = {**spec.settings, "upscale": {"upscaler": self.upscaler.name, **upscale.settings}}
        return dataclasses.replace(
            spec,
            stages=[*spec.stages, *upscale.stages],
            frame_size=upscale.frame_size,
            settings=settings,
            reference_size=spec.reference_size or spec.frame_size,
        )

    def reference(self, path: Path | None, options: OptionsLike = None) -> np.ndarray:
        """The family's reference: the base model is conditioned on it at its own size."""
        return self.base.reference(path, options)
