"""The stage graph is checked when the pipeline is built, not mid-session."""

from __future__ import annotations

import pytest
import torch

from avatarstream.errors import PipelineGraphError
from avatarstream.families.chunk_plan import ChunkPlan
from avatarstream.pipeline.pipeline import Pipeline
from avatarstream.pipeline.stage import Stage
from avatarstream.runtime.residency import Runtime


def make_stage(name: str, phase: str, reads: tuple[str, ...] = (), writes: tuple[str, ...] = ()) -> Stage:
    cls = type(name.title(), (Stage,), {"name": name, "phase": phase, "reads": reads, "writes": writes, "run": lambda self, ctx: None})
    return cls()


def build(stages: list[Stage]) -> Pipeline:
    return Pipeline(stages, ChunkPlan(4, 1, 1), Runtime(torch.device("cpu")), fps=25, model_sample_rate=16000)


def complete_graph() -> list[Stage]:
    return [
        make_stage("ref", "init", ("reference_image",), ("ref_tokens",)),
        make_stage("ctx", "chunk", ("chunk", "audio"), ("features",)),
        make_stage("gen", "chunk", ("features", "ref_tokens", "conditioning"), ("latents",)),
        make_stage("dec", "final", ("latents",), ("frames",)),
    ]


def test_complete_graph_builds() -> None:
    assert [s.name for s in build(complete_graph()).stages] == ["ref", "ctx", "gen", "dec"]


def test_missing_input_names_stage_and_value() -> None:
    stages = complete_graph()
    stages[1] = make_stage("ctx", "chunk", ("chunk", "audio"), ("other",))
    with pytest.raises(PipelineGraphError, match=r"stage 'gen' \(chunk\) reads \['features'\] but nothing before it writes it"):
        build(stages)


def test_order_matters_within_a_phase() -> None:
    stages = complete_graph()
    stages[1], stages[2] = stages[2], stages[1]
    with pytest.raises(PipelineGraphError, match="'gen'.*features"):
        build(stages)


def test_chunk_values_are_not_visible_to_final_stages() -> None:
    stages = complete_graph()
    stages[3] = make_stage("dec", "final", ("latents", "features"), ("frames",))
    with pytest.raises(PipelineGraphError, match="'dec'.*features"):
        build(stages)


def test_required_outputs() -> None:
    stages = complete_graph()[:3]
    with pytest.raises(PipelineGraphError, match=r"no final stage writes \['frames'\]"):
        build(stages)


def test_duplicate_names_and_unknown_phase() -> None:
    with pytest.raises(PipelineGraphError, match="unique"):
        build(complete_graph() + [make_stage("dec", "final", ("latents",), ("frames",))])
    with pytest.raises(PipelineGraphError, match="unknown phase"):
        build(complete_graph() + [make_stage("odd", "sometimes")])


def test_writing_a_provided_value_is_rejected() -> None:
    stages = complete_graph()
    stages.insert(1, make_stage("evil", "chunk", (), ("chunk",)))
    with pytest.raises(PipelineGraphError, match="provides itself"):
        build(stages)
