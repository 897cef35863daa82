"""The one place a family's pipeline is assembled: its spec, the runtime that places its weights, the pipeline.

``cli/``, ``serve/``, ``api.py``, the integrations and the benchmarks call
``build_pipeline``; a family only describes its pipeline (``Family.build``
returns a ``PipelineSpec``), so residency, overlap and the parallel groups are
chosen here, the same way for every family.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from avatarstream.families.base import Family, OptionsLike

if TYPE_CHECKING:
    import torch

    from avatarstream.pipeline.pipeline import Pipeline
    from avatarstream.runtime.parallel.groups import ParallelGroups


def build_pipeline(
    family: Family,
    device: torch.device,
    options: OptionsLike = None,
    *,
    residency: Mapping[str, str] | None = None,
    overlap: bool = False,
    read_ahead: bool = False,
    parallel: ParallelGroups | None = None,
) -> Pipeline:
    """``family``'s pipeline for ``options`` on ``device``: weights placed by ``residency`` (module -> policy), final stages
    overlapped with the next chunk (``overlap``), the next chunk's context read ahead (``read_ahead``: file sources), the
    work split as ``parallel`` says (the groups ``launch.init_rank`` made, ``RankInfo.groups``; None: one process)."""
    from avatarstream.pipeline.pipeline import Pipeline
    from avatarstream.runtime.residency import Runtime

    spec = family.build(family.Options.parse(options))
    return Pipeline.from_spec(spec, Runtime(device, residency, parallel=parallel), overlap=overlap, read_ahead=read_ahead)


def build_sibling_pipeline(family: Family, sibling: Pipeline, options: OptionsLike = None) -> Pipeline:
    """``family``'s pipeline for other ``options`` on the runtime of ``sibling``, a pipeline over the same modules, so that
    runs of the two can go on at once (a server's sessions). A module belongs to one runtime: two runtimes would take it
    from each other at every stage, removing each other's hooks mid-run, and deadlock on each other's locks."""
    from avatarstream.pipeline.pipeline import Pipeline

    spec = family.build(family.Options.parse(options))
    return Pipeline.from_spec(spec, sibling.runtime, overlap=sibling.overlap, read_ahead=sibling.read_ahead)
