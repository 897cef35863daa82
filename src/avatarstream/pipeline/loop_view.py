"""What the chunk loop's parts read of the pipeline they run in: a view, so they need not import ``Pipeline`` itself."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

import torch

from avatarstream.pipeline.chunks import FrameLayout
from avatarstream.pipeline.plan import Plan
from avatarstream.pipeline.stage import Phase, Stage
from avatarstream.runtime.residency import Runtime


class PipelineView(Protocol):
    """The settings of one built pipeline (``Pipeline`` is one); read-only to the run, its scheduler, executor and emitter."""

    stages: tuple[Stage, ...]
    plan: Plan
    runtime: Runtime
    frames: FrameLayout
    video_frames: Callable[[float], int]
    fps: int
    model_sample_rate: int
    output_sample_rate: int
    output_channels: int
    overlap: bool
    read_ahead: bool
    collective_finals: bool
    whole_audio: bool
    independent: tuple[Stage, ...]
    audio_frames_before: int
    audio_frames_after: int

    @property
    def device(self) -> torch.device: ...

    def phase(self, phase: Phase) -> tuple[Stage, ...]: ...
