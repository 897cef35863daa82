"""The interface every model family offers; ``cli/``, ``serve/``, ``fleet/``, ``api.py`` and the benchmarks use nothing else.

A family class is registered by name (``families/registry.py``). It declares
its options (``Options``, a ``FamilyOptions`` dataclass), loads its modules
from a weights folder as the user downloaded it (``load``), and describes the
pipeline that options make (``build`` returns a ``PipelineSpec``: its stages,
chunk plan, rates and output size); ``families.assemble.build_pipeline`` puts
the runtime under it. Nothing a family holds depends on its last build.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from avatarstream.families.options import FamilyOptions

if TYPE_CHECKING:  # the registry imports this module to list families: it must not load torch
    import numpy as np
    import torch

    from avatarstream.pipeline.spec import PipelineSpec
    from avatarstream.runtime.module import Module

OptionsLike = FamilyOptions | Mapping[str, Any] | None
#: (weights folder or None, the family's parsed options) -> None, or an InputError that says what is missing and what to
#: download where. It reads the folder's layout (pathlib, json) and imports no torch, so a command refuses a bad folder
#: at once; the family's ``load`` runs the same check.
WeightsCheck = Callable[[Path | None, Any], None]


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


#: What a family may offer beyond the protocol, with what the framework takes when it offers nothing (read with ``optional``):
OPTIONAL: dict[str, Any] = {
    # sentences a user should know of the loaded weights (random ones render noise); every run reports them
    "warnings": (),
    # reference repositories ("owner/name") whose golden sets `avatarstream parity` runs with this family
    "golden_repos": (),
    # (golden set, on_case) -> the checks of every case in the set: the family's parity cases
    "parity": None,
    # (golden set) -> the arguments of ``avatarstream.render`` that run a whole-video golden set as its reference CLI did
    "golden_render_arguments": None,
    # the options that switch the family's seam smoothing off (`avatarstream eval` compares with and without)
    "seam_smoothing_off": None,
    # (reference image, samples, *, options, seed) -> frames: the networks in a plain loop (`bench overhead`'s baseline)
    "raw_frames": None,
    # (pipeline, samples, spans) -> per span, how far windowed audio features are from whole-file ones (`bench audio-window`)
    "audio_window_errors": None,
    # renders in real time on a CPU with nothing to download (`bench contention`, `load-memory`, `soak`, `fleet` run it in fresh processes)
    "cpu_real_time": False,
    # () -> [(output size, () -> the model at that size: same widths, random weights)], smallest first (`bench resolution`)
    "resolution_sweep": None,
    # () -> the model at production size with random weights (`bench gpu`, on one GPU)
    "production_model": None,
    # a WeightsCheck (a static method of the class): the commands run it before anything heavy is imported
    "check_weights": None,
}


def optional(family: object, member: str) -> Any:
    """``family``'s optional ``member`` (a loaded family or its class), or the framework's default for it (``OPTIONAL``)."""
    return getattr(family, member, OPTIONAL[member])


def model_warnings(family: object) -> list[str]:
    """What a loaded model says about its weights, for every run (a family without a ``warnings`` member has none)."""
    return [str(text) for text in optional(family, "warnings")]


class FamilyClass(Protocol):
    """What the registry needs of a family's class before anything is loaded (and the optional ``check_weights``).

    A plug-in's class is imported to read these, so the module that defines it
    stays light: torch and the model code are imported inside ``load``.
    """

    Options: type[FamilyOptions]
    summary: ClassVar[str]  # one line: what it is
    weights_help: ClassVar[str]  # one line: which weights it needs (what --weights names)

    def load(self, weights: Path | None, options: FamilyOptions, *, device: torch.device, seed: int = 0) -> Family: ...


@dataclass(frozen=True)
class Description:
    """What the commands need of a family before its model code loads: ``avatarstream families`` prints the two lines, the
    commands make their flags from ``options`` and run ``check_weights`` (when the family has one) before torch loads."""

    summary: str
    weights_help: str
    options: type[FamilyOptions]
    check_weights: WeightsCheck | None = None
