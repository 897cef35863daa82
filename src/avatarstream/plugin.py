"""The public API for authors of model families: everything a family package outside this repository imports.

A family is a class registered under the entry-point group
``avatarstream.families`` (docs/families.md walks through one). It declares
its options (a ``FamilyOptions`` dataclass of ``option`` fields), loads its
``Module``s from a weights folder, and ``build`` returns a ``PipelineSpec``:
its ``Stage``s, its chunk plan (``ChunkPlan`` for N/I chunks with
interpolated seams, ``BlockPlan`` for a block-causal model, or its own
``Plan``), rates and output size, and what each parallel strategy may split
(``SplitsSequence`` for ``sp``, ``GuidedPredictions`` for ``cfg``,
``SplitsSteps`` for ``steps``, or a ``Strategy`` of the package's own,
registered under the entry-point group ``avatarstream.parallel``). The
framework assembles the runtime and the pipeline from the spec, so the CLI,
the server, the fleet, the Python API and the benchmarks run the family with
nothing else to write.

An upscaler (a super-resolution stage after any family's frames) is a class
registered under ``avatarstream.upscalers`` the same way: options, ``load``,
and ``build`` returning an ``UpscaleSpec`` (final stages that read and write
``frames``; the last may hold frames back, ``Stage.holds_frames``, and give
them out in its ``flush``).

Import from here only: the modules behind these names may move. The
interface, the options and ``InputError`` load no torch; every other name is
imported on first use, so a module that defines a family class with them (and
imports torch and its networks inside ``load``) stays light: the registry
imports it to list the family and to run its ``check_weights``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from avatarstream.errors import InputError
from avatarstream.families.base import Family, FamilyClass, WeightsCheck
from avatarstream.families.options import FamilyOptions, option
from avatarstream.families.upscaler import Upscaler, UpscalerClass, UpscaleSpec

if TYPE_CHECKING:
    from avatarstream.families.block_plan import BlockPlan
    from avatarstream.families.chunk_plan import ChunkPlan
    from avatarstream.pipeline.audio_window import AudioWindow
    from avatarstream.pipeline.chunks import Chunk, FrameLayout
    from avatarstream.pipeline.plan import Plan
    from avatarstream.pipeline.spec import PipelineSpec
    from avatarstream.pipeline.stage import Stage
    from avatarstream.pipeline.state import StageContext
    from avatarstream.runtime.module import Module
    from avatarstream.runtime.parallel.groups import ParallelGroups
    from avatarstream.runtime.parallel.guidance import GuidedPredictions
    from avatarstream.runtime.parallel.layout import ParallelLayout
    from avatarstream.runtime.parallel.steps import SplitsSteps
    from avatarstream.runtime.parallel.strategy import RoleStrategy, Strategy
    from avatarstream.runtime.parallel.ulysses import SplitsSequence
    from avatarstream.sources.bundled import DEFAULT_REFERENCE
    from avatarstream.sources.reference import load_reference_image
    from avatarstream.sources.warn import warn
    from avatarstream.stages.common import device_and_dtype, image_to_video_tensor, video_to_frames

#: Every other public name, by module, imported on first use (many of these modules load torch).
_LAZY = {
    "BlockPlan": "avatarstream.families.block_plan",
    "ChunkPlan": "avatarstream.families.chunk_plan",
    "AudioWindow": "avatarstream.pipeline.audio_window",
    "Chunk": "avatarstream.pipeline.chunks",
    "FrameLayout": "avatarstream.pipeline.chunks",
    "Plan": "avatarstream.pipeline.plan",
    "PipelineSpec": "avatarstream.pipeline.spec",
    "Stage": "avatarstream.pipeline.stage",
    "StageContext": "avatarstream.pipeline.state",
    "Module": "avatarstream.runtime.module",
    "ParallelGroups": "avatarstream.runtime.parallel.groups",
    "GuidedPredictions": "avatarstream.runtime.parallel.guidance",
    "ParallelLayout": "avatarstream.runtime.parallel.layout",
    "SplitsSteps": "avatarstream.runtime.parallel.steps",
    "RoleStrategy": "avatarstream.runtime.parallel.strategy",
    "Strategy": "avatarstream.runtime.parallel.strategy",
    "SplitsSequence": "avatarstream.runtime.parallel.ulysses",
    "DEFAULT_REFERENCE": "avatarstream.sources.bundled",
    "load_reference_image": "avatarstream.sources.reference",
    "warn": "avatarstream.sources.warn",
    "device_and_dtype": "avatarstream.stages.common",
    "image_to_video_tensor": "avatarstream.stages.common",
    "video_to_frames": "avatarstream.stages.common",
}


def __getattr__(name: str) -> Any:
    """A name of ``_LAZY``, imported now (PEP 562)."""
    if name not in _LAZY:
        raise AttributeError(f"module 'avatarstream.plugin' has no attribute {name!r}")
    value = getattr(importlib.import_module(_LAZY[name]), name)
    globals()[name] = value  # imported once
    return value


__all__ = [
    "DEFAULT_REFERENCE",
    "AudioWindow",
    "BlockPlan",
    "Chunk",
    "ChunkPlan",
    "Family",
    "FamilyClass",
    "FamilyOptions",
    "FrameLayout",
    "GuidedPredictions",
    "InputError",
    "Module",
    "ParallelGroups",
    "ParallelLayout",
    "PipelineSpec",
    "Plan",
    "RoleStrategy",
    "SplitsSequence",
    "SplitsSteps",
    "Stage",
    "StageContext",
    "Strategy",
    "UpscaleSpec",
    "Upscaler",
    "UpscalerClass",
    "WeightsCheck",
    "device_and_dtype",
    "image_to_video_tensor",
    "load_reference_image",
    "option",
    "video_to_frames",
    "warn",
]
