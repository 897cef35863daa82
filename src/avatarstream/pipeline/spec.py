"""What a family's ``build`` returns: a description of its pipeline, which the framework assembles (``pipeline.assemble``).

A family says what its pipeline is (stages, chunk plan, frame layout, rates,
output size, the settings it resolved), what each parallel strategy may split
and which layouts it cannot take; it never builds the runtime or the pipeline itself, so where weights
live and how processes split the work stay the framework's, and a family
holds no state that depends on the last build.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from avatarstream.pipeline.chunks import FrameLayout
from avatarstream.pipeline.plan import Plan
from avatarstream.pipeline.stage import Stage
from avatarstream.runtime.parallel.layout import ParallelLayout


@dataclass(frozen=True)
class PipelineSpec:
    """A family's pipeline as data. ``frame_size`` is (width, height); ``settings`` every generation setting, for reports."""

    stages: Sequence[Stage]
    plan: Plan
    fps: int
    model_sample_rate: int
    frame_size: tuple[int, int]
    settings: Mapping[str, object] = field(default_factory=dict)
    #: timeline (latent) frames -> video frames
    frames: FrameLayout = FrameLayout()
    #: how many video frames audio of a duration (seconds) makes; None: round(duration x fps)
    video_frames: Callable[[float], int] | None = None
    #: raises an ``InputError`` naming what to change when this pipeline cannot run under a ``--parallel`` layout
    check_layout: Callable[[ParallelLayout], None] | None = None
    #: what each parallel strategy may split, by its ``--parallel`` word: {"sp": [SplitsSequence(...)], "cfg":
    #: [GuidedPredictions(...)], "steps": [SplitsSteps()], or an installed strategy's word: [its own parts]}
    parallel: Mapping[str, Sequence[object]] = field(default_factory=dict)
    #: (width, height) the family fits the reference to, where the video comes out larger (an upscaler's); None: ``frame_size``
    reference_size: tuple[int, int] | None = None
