"""The server's pipelines per set of build options, without a server: a family whose frame size is a build option,
references fitted from the session's options with no build, sessions' model_options checked by name, load options refused,
a bounded cache."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from avatarstream.errors import InputError
from avatarstream.families.assemble import build_pipeline
from avatarstream.plugin import BlockPlan, FamilyOptions, PipelineSpec, Stage, StageContext, option
from avatarstream.serve.model_options import parse_model_options
from avatarstream.serve.pipelines import Pipelines
from avatarstream.serve.problems import Busy


@dataclass(frozen=True)
class SquareOptions(FamilyOptions):
    side: int | None = option(help="frame side in pixels (16)", minimum=16, maximum=64)
    precision: str | None = option(help="how weights are read", choices=("fp32", "bf16"), scope="load")
    shade: int | None = option(help="grey level of the default reference", minimum=0, maximum=255, scope="request")


class Grey(Stage):
    """One chunk stage: latents of the chunk's length (nothing to compute)."""

    name, phase, reads, writes = "grey", "chunk", ("chunk",), ("latents",)

    def run(self, ctx: StageContext) -> None:
        ctx["latents"] = torch.zeros(1, 1, ctx["chunk"].window_frames, 1, 1)


class Pixels(Stage):
    name, phase, reads, writes = "pixels", "final", ("latents",), ("frames",)

    def run(self, ctx: StageContext) -> None:
        ctx["frames"] = np.zeros((ctx["latents"].shape[2], 16, 16, 3), np.uint8)


class SquareFamily:
    """A family whose frame size is a build option, and whose builds take a while (so two can race)."""

    Options = SquareOptions
    fps = 25

    def __init__(self) -> None:
        self.builds = 0

    def build(self, options: SquareOptions) -> PipelineSpec:
        side = options.side or 16
        threading.Event().wait(0.01)
        self.builds += 1
        return PipelineSpec([Grey(), Pixels()], BlockPlan(4), self.fps, 16000, (side, side), {"side": side})

    def reference(self, path: Path | None, options: Any = None) -> np.ndarray:
        parsed = SquareOptions.parse(options)
        side = parsed.side or 16
        return np.full((side, side, 3), parsed.shade or 0, np.uint8)


def pipelines(**kwargs: Any) -> tuple[SquareFamily, Pipelines]:
    family = SquareFamily()
    options = SquareOptions(side=16)
    shared = build_pipeline(family, torch.device("cpu"), options)
    return family, Pipelines(family, options, shared, "ultrafast", **kwargs)  # type: ignore[arg-type]


def test_each_set_of_build_options_has_its_pipeline_its_frame_size_and_fitting_references() -> None:
    family, server = pipelines()
    same = server.acquire(server.session_options('{"shade": 9}'))  # a request option: the shared pipeline
    assert same is server.shared and family.builds == 1
    with ThreadPoolExecutor(8) as pool:  # sessions of two other sizes opening at once
        built = list(pool.map(lambda side: server.acquire(server.session_options(f'{{"side": {side}}}')), [32, 48] * 4))
    assert family.builds == 3, "one build per set of options, reused by later sessions"
    for b in built:
        side = b.options.side
        assert b.pipeline.frame_size == (side, side) and (b.encoder.width, b.encoder.height) == (side, side)
        # one runtime places the modules for every pipeline: two would take each module from each other at every stage while
        # their sessions run at once (and did deadlock on each other's locks)
        assert b.pipeline.runtime is server.shared.pipeline.runtime
    assert server.in_use == {(("side", 32),): 4, (("side", 48),): 4}
    other = built[0]
    image = server.reference(other, None, server.session_options(f'{{"side": {other.options.side}, "shade": 7}}'))
    assert image.shape == (other.options.side, other.options.side, 3) and image[0, 0, 0] == 7, "fitted for its own pipeline"
    assert server.reference(server.shared, None, server.options).shape == (16, 16, 3)
    assert family.builds == 3, "fitting a reference builds nothing"
    for b in built:
        server.release(b)
    assert server.in_use == {(("side", 32),): 0, (("side", 48),): 0}


def test_model_options_are_checked_by_name_and_load_options_refused() -> None:
    _, server = pipelines()
    cases = {
        "{nope": "not JSON",
        "[16]": "got an array",
        '{"colour": 1}': "unknown model option colour; this model takes: precision, shade, side",
        '{"side": 8}': "side must be between 16 and 64, got 8",
        '{"side": "big"}': "side must be a whole number",
        '{"precision": "bf16"}': "precision is chosen when the server starts",
    }
    for text, words in cases.items():
        with pytest.raises(InputError, match="^model_options") as refused:
            server.session_options(text)
        assert words in str(refused.value), (text, str(refused.value))
        assert "--" not in str(refused.value), "options are named as clients send them, not as command-line flags"
    assert parse_model_options(SquareOptions, "").given() == {}
    assert server.options.merged(parse_model_options(SquareOptions, '{"shade": 3}')).given() == {"side": 16, "shade": 3}


def test_a_bounded_number_of_other_pipelines_and_none_on_a_parallel_server() -> None:
    _, server = pipelines(limit=2)
    a, b = (server.acquire(server.session_options(f'{{"side": {side}}}')) for side in (20, 24))
    with pytest.raises(Busy, match="2 other sets of build options"):
        server.acquire(server.session_options('{"side": 28}'))
    server.release(a)
    c = server.acquire(server.session_options('{"side": 28}'))  # the unused one made room
    assert set(server.in_use) == {(("side", 24),), (("side", 28),)} and c.encoder.width == 28 and b.pipeline.frame_size == (24, 24)
    _, parallel = pipelines(parallel=True)
    assert parallel.acquire(parallel.session_options('{"shade": 1}')) is parallel.shared
    with pytest.raises(InputError, match=r"cannot change options of scope build \(side\)"):
        parallel.acquire(parallel.session_options('{"side": 32}'))
