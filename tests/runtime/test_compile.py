"""--compile: each DiT's transformer blocks compiled once per shape; a 10-chunk run compiles nothing after its first
chunks, under every residency policy that allows it, and its frames are eager's.

The tests compile with dynamo's ``aot_eager`` backend: capture, guards and recompiles are dynamo's whatever the
backend, and inductor's C++ build of the same graphs takes minutes on a two-core machine. Inductor's frames and speed
are measured by ``avatarstream bench --scenario compile`` (bench/results/*-cpu-compile).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from helpers import RATE, speech

from avatarstream.errors import InputError
from avatarstream.families.assemble import build_pipeline
from avatarstream.families.base import Family
from avatarstream.families.infinitetalk.layout import WeightsLayout
from avatarstream.families.registry import load_family
from avatarstream.pipeline.observer import ChunkDone, RunObserver
from avatarstream.runtime.compiled import graphs_compiled
from avatarstream.runtime.policy import Resident
from avatarstream.sources.pcm import PcmBlock

BACKEND = "aot_eager"
DEMO = {"chunk_frames": 6, "interp_frames": 2}
INFINITETALK = {"preset": "flashtalk", "size": (32, 32), "steps": 1}
LIVEAVATAR = {"size": (64, 64), "steps": 2, "cache_blocks": 1, "audio_window_s": 1.0, "audio_lookahead": 4}
#: Frames of a compiled run against eager's, in levels of 255 (inductor on this CPU: at most 1; aot_eager: 0).
TOLERANCE = 1


@pytest.fixture(autouse=True)
def fresh_dynamo() -> Iterator[None]:
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


class GraphsPerChunk(RunObserver):
    def __init__(self) -> None:
        self.graphs: list[int] = []

    def on_chunk(self, done: ChunkDone) -> None:
        self.graphs.append(graphs_compiled())


def _blocks(seconds: float) -> Iterator[PcmBlock]:
    samples = speech(seconds)
    for start in range(0, samples.shape[-1], RATE // 5):
        yield PcmBlock(samples[:, start : start + RATE // 5], RATE)


def _render(
    family: Family, options: dict[str, Any], seconds: float, residency: dict[str, str] | None = None, *, compile: bool
) -> tuple[np.ndarray, list[int], dict[str, Any]]:
    pipeline = build_pipeline(family, torch.device("cpu"), options, residency=residency)
    if compile:
        pipeline.compile(BACKEND)
    watch = GraphsPerChunk()
    frames = np.concatenate([m.frames for m in pipeline.stream(_blocks(seconds), family.reference(None, options), observers=[watch])])
    return frames, watch.graphs, pipeline.runtime.summary()


def _check(family: Family, options: dict[str, Any], seconds: float, residency: dict[str, str] | None, dits: list[str]) -> None:
    eager, _, _ = _render(family, options, seconds, compile=False)  # before compiling: it changes the family's blocks for good
    before = graphs_compiled()
    frames, graphs, summary = _render(family, options, seconds, residency, compile=True)
    assert len(graphs) >= 10
    assert graphs[0] > before, "the first chunk compiled its blocks"
    assert graphs[-1] == graphs[2], f"graphs compiled by the end of each chunk: {graphs}; none after the third (every kind of chunk seen)"
    assert summary["compiled"] == dits and summary["compile_s"] > 0
    assert frames.shape == eager.shape
    assert np.abs(frames.astype(np.int16) - eager).max() <= TOLERANCE


@pytest.mark.parametrize("residency", [None, {"a2v_dit": "streamed:2", "default": "offloaded"}], ids=["resident", "streamed+offloaded"])
def test_demo_compiles_once_per_shape(residency: dict[str, str] | None) -> None:
    _check(load_family("demo-tiny"), DEMO, 1.3, residency, ["a2v_dit", "sr_dit"])


def test_infinitetalk_compiles_once_per_shape(tiny_original: WeightsLayout) -> None:
    """Its DiT streamed (the policies' effect on compiled blocks is the demo test's; this is the family's seam)."""
    _check(load_family("infinitetalk", tiny_original.base.parent), INFINITETALK, 11.5, {"dit": "streamed:2"}, ["dit"])


def test_liveavatar_compiles_once_per_shape(tiny_liveavatar: Path) -> None:
    """Block-causal: the sink prefill and the blocks until the rolling cache is full are shapes of their own, then none."""
    _check(load_family("liveavatar", tiny_liveavatar), LIVEAVATAR, 4.6, None, ["dit"])


def test_a_policy_that_cannot_be_compiled_is_one_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """Sharded modules (sequential-only policies) are refused before anything compiles."""
    pipeline, before = build_pipeline(load_family("demo-tiny"), torch.device("cpu"), DEMO), graphs_compiled()
    monkeypatch.setattr(Resident, "sequential_only", True)  # what FSDP2's policy says of itself
    with pytest.raises(InputError, match=r"--compile cannot compile 'a2v_dit' under 'resident'.*leave --compile off"):
        pipeline.compile(BACKEND)
    assert graphs_compiled() == before and pipeline.runtime.summary()["compiled"] == []
