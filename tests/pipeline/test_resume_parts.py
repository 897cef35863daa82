"""Resumable state is what the stages say they need: taken without draining the finalize worker, weighed in every report."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from avatarstream.families.assemble import build_pipeline
from avatarstream.families.block_plan import BlockPlan
from avatarstream.families.registry import load_family
from avatarstream.pipeline.emitter import Handover
from avatarstream.pipeline.observer import ChunkDone, RunObserver
from avatarstream.pipeline.pipeline import Pipeline
from avatarstream.pipeline.report import ReportRecorder
from avatarstream.pipeline.resume import Resumable, StageParts, nbytes_of
from avatarstream.pipeline.stage import Stage
from avatarstream.pipeline.state import StageContext
from avatarstream.runtime.cpu_threads import set_threads
from avatarstream.runtime.overlap import FinalizeWorker
from avatarstream.runtime.residency import Runtime
from avatarstream.sources.pcm import PcmBlock
from avatarstream.stages.demo.decode import DecodeStage
from pipeline.test_resume import Saver
from pipeline.test_streaming import RATE, frames_of, pieces, speechy

REFERENCE = np.full((64, 64, 3), 128, dtype=np.uint8)


class Chunks(RunObserver):
    def __init__(self) -> None:
        self.done: list[ChunkDone] = []

    def on_chunk(self, done: ChunkDone) -> None:
        self.done.append(done)


def demo(**kwargs: Any) -> Pipeline:
    pipeline: Pipeline = build_pipeline(load_family("demo-tiny"), torch.device("cpu"), {"chunk_frames": 6, "interp_frames": 2}, **kwargs)
    return pipeline


def resumes_identically(pipeline: Pipeline, samples: np.ndarray, whole: list, state: Resumable) -> None:
    start = state.audio.input_samples
    rest = list(pipeline.stream(iter(pieces(samples[:, start:], 4)), np.zeros_like(REFERENCE), resume=state))
    assert rest[0].first_frame == state.published_frames > 0
    np.testing.assert_array_equal(frames_of(rest), frames_of(whole)[state.published_frames :])


def _states_waiting(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many states wait for their frames right after each chunk boundary (filled as the run goes)."""
    waiting: list[int] = []
    boundary = Handover.boundary

    def watched(handover: Handover, state: Resumable, finishes: int) -> None:
        boundary(handover, state, finishes)
        waiting.append(len(handover))

    monkeypatch.setattr(Handover, "boundary", watched)
    return waiting


@pytest.fixture
def held_threads() -> Iterator[None]:
    """One thread count for the test, whatever the machine's load: its runs are compared bit for bit."""
    set_threads(None, follow_machine=False)
    yield
    set_threads(None)


def test_savers_never_drain_the_finalize_worker(monkeypatch: pytest.MonkeyPatch, held_threads: None) -> None:
    """With overlap on, taking states costs no drain: the first frames (time to first frame) and the end are the only ones."""
    drains: list[int] = []  # in flight at each drain
    original = FinalizeWorker.drain

    def counted(worker: FinalizeWorker[Any]) -> Any:
        drains.append(len(worker._pending))
        return original(worker)

    monkeypatch.setattr(FinalizeWorker, "drain", counted)
    waiting = _states_waiting(monkeypatch)
    samples = speechy(4.0)
    overlapped = demo(overlap=True, read_ahead=True)
    plain = list(overlapped.stream(iter(pieces(samples, 3)), REFERENCE, seed=5))
    without = len(drains)
    saver = Saver()
    whole = list(overlapped.stream(iter(pieces(samples, 3)), REFERENCE, seed=5, observers=[saver]))
    assert len(drains) - without == without == 2, drains
    np.testing.assert_array_equal(frames_of(whole), frames_of(plain))
    assert max(waiting) <= 2, "at most one state waits per stretch in flight"
    published = [s.published_frames for s in saver.states]
    assert published == sorted(published) and len(saver.states) >= 10
    assert sum(c.num_frames for c in whole) == 100
    for state in (saver.states[2], saver.states[5], saver.states[-3]):
        resumes_identically(overlapped, samples, whole, state)
        resumes_identically(demo(), samples, whole, state)  # a state taken with overlap resumes without it, and back


@pytest.mark.parametrize("overlap", [False, True], ids=["inline", "overlap"])
def test_the_report_weighs_each_boundarys_state(tmp_path: Path, overlap: bool) -> None:
    pipeline = demo(overlap=overlap)
    samples = [PcmBlock(speechy(2.0), RATE)]
    saver, chunks, report = Saver(), Chunks(), ReportRecorder()
    list(pipeline.stream(samples, REFERENCE, seed=1, observers=[saver, chunks, report]))
    weights = {pipeline.plan.next_after(d.chunk).key: d.resumable_bytes for d in chunks.done}
    assert saver.states and all(weights[s.next_chunk] == s.nbytes for s in saver.states)
    assert all(s.caches.keys() == {"decode"} for s in saver.states), "only the decoder keeps something to resume"
    report.write(tmp_path / "r.json")
    records = json.loads((tmp_path / "r.json").read_text())["chunks"]
    assert [r["resumable_bytes"] for r in records] == [d.resumable_bytes for d in chunks.done]
    report.close()
    alone = Chunks()  # weighed the same when nobody takes the state
    list(pipeline.stream(samples, REFERENCE, seed=1, observers=[alone]))
    assert [d.resumable_bytes for d in alone.done] == [d.resumable_bytes for d in chunks.done]


def test_a_stage_that_keeps_nothing_adds_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    cache = object()
    assert DecodeStage.__new__(DecodeStage).resume_state(cache) is cache  # the decoder keeps its cache
    samples = [PcmBlock(speechy(1.5), RATE)]
    kept, kept_chunks = Saver(), Chunks()
    list(demo().stream(samples, REFERENCE, seed=2, observers=[kept, kept_chunks]))
    monkeypatch.setattr(DecodeStage, "resumes_with_cache", False)
    none, none_chunks = Saver(), Chunks()
    list(demo().stream(samples, REFERENCE, seed=2, observers=[none, none_chunks]))
    assert all(s.caches == {} for s in none.states)
    for a, b in zip(kept.states, none.states, strict=True):
        assert a.nbytes - b.nbytes == nbytes_of(a.caches["decode"]) > 0
    assert [d.resumable_bytes for d in none_chunks.done] == [s.nbytes for s in none.states]


def test_the_default_hooks_keep_nothing() -> None:
    class Plain(Stage):
        name, phase = "plain", "final"

        def run(self, ctx: StageContext) -> None: ...

    stage = Plain()
    assert stage.resume_state({"kv": torch.ones(4)}) is None
    assert stage.restore_cache({"kv": torch.ones(4)}) is None


def test_handover_waits_for_each_boundarys_frames() -> None:
    got: list[tuple[tuple[str, int], dict[str, Any]]] = []

    class Got(RunObserver):
        def on_resumable(self, state: Resumable) -> None:
            got.append((state.next_chunk, state.caches))

    def state(k: int) -> Resumable:
        return Resumable(("B", k), 0, 0, {}, {}, {"gen": k}, None, 0)  # type: ignore[arg-type]

    handover = Handover([Got()], StageParts({"dec": "start"}, 0))
    handover.boundary(state(0), 0)  # nothing in flight: whole at once, with the final stages' parts as they stand
    handover.boundary(state(1), 1)
    handover.boundary(state(2), 2)
    handover.boundary(state(3), 2)  # needs no more than the one before: replaces it
    assert got == [(("B", 0), {"gen": 0, "dec": "start"})] and len(handover) == 2
    handover.stretch_out(StageParts({"dec": "after 1"}, 0))
    handover.stretch_out(StageParts({"dec": "after 2"}, 0))
    assert got[1:] == [(("B", 1), {"gen": 1, "dec": "after 1"}), (("B", 3), {"gen": 3, "dec": "after 2"})] and len(handover) == 0


# -- a block-causal toy: a running state in a chunk stage and in a final stage, both resumed by their hooks --------------


class RunningGen(Stage):
    """Each block continues a running value (a stand-in for a causal model's KV cache) driven by the audio."""

    name, phase, reads, writes = "gen", "chunk", ("chunk", "audio"), ("latents",)

    def __init__(self, keeps: bool) -> None:
        self.keeps = keeps

    def run(self, ctx: StageContext) -> None:
        chunk = ctx["chunk"]
        assert ctx["conditioning"] is None
        audio = ctx["audio"].read(chunk.window_start, chunk.window_end)
        loud = torch.from_numpy(np.abs(audio).reshape(chunk.window_frames, -1).mean(1)).double()
        x = (ctx.cache if ctx.cache is not None else torch.zeros((), dtype=torch.float64)) + loud.cumsum(0)
        if ctx.cache is None:
            ctx.cache = x[-1].clone()
        else:
            ctx.cache.copy_(x[-1])  # in place, as a preallocated KV cache is written: a state resumed twice must not see it
        ctx["latents"] = x.view(1, 1, -1, 1, 1)

    def resume_state(self, cache: Any) -> Any:
        return cache if self.keeps else None

    def restore_cache(self, saved: Any) -> Any:
        return saved


class Gate(RunObserver):
    """Holds the decoding of each block after the first until the loop has passed that block's boundary."""

    def __init__(self) -> None:
        self.passed = {k: threading.Event() for k in range(64)}

    def on_chunk(self, done: ChunkDone) -> None:
        self.passed[done.chunk.index].set()


class DeltaDecode(Stage):
    """Frames from the change since the last decoded frame: a final stage whose cache must continue."""

    name, phase, reads, writes = "dec", "final", ("latents",), ("frames",)

    def __init__(self, gate: Gate | None = None) -> None:
        self.gate = gate

    def run(self, ctx: StageContext) -> None:
        block = ctx["frames_range"][0] // 3
        if self.gate is not None and block > 0:
            assert self.gate.passed[block].wait(30), "the loop waited for the decoder at a chunk boundary"
        x = ctx["latents"].flatten()
        previous = ctx.cache if ctx.cache is not None else torch.zeros((), dtype=torch.float64)
        delta = torch.diff(x, prepend=previous.view(1))
        ctx.cache = x[-1].clone()
        ctx["frames"] = np.repeat((delta * 7919).remainder(256).to(torch.uint8).numpy()[:, None, None, None], 3, axis=3).repeat(2, 1).repeat(2, 2)

    def resume_state(self, cache: Any) -> Any:
        return cache

    def restore_cache(self, saved: Any) -> Any:
        return saved


def toy(*, keeps: bool = True, overlap: bool = False, gate: Gate | None = None) -> Pipeline:
    stages = [RunningGen(keeps), DeltaDecode(gate)]
    return Pipeline(stages, BlockPlan(3), Runtime(torch.device("cpu")), fps=25, model_sample_rate=RATE, overlap=overlap)


def test_states_wait_for_their_frames_while_the_loop_goes_on(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each block's decoding is held until the loop has passed its boundary: the loop never waits for it, and the state
    of that boundary is handed on only after the block's frames, with the decoder's cache as it was right after them."""
    waiting = _states_waiting(monkeypatch)
    samples = speechy(2.0)
    gate, saver = Gate(), Saver()
    out = [0]  # video frames handed on so far

    class Order(RunObserver):
        wants_resumable = True

        def on_frames(self, first_frame: int, count: int, at_s: float) -> None:
            out[0] = first_frame + count

        def on_resumable(self, state: Resumable) -> None:
            assert state.published_frames == out[0], "a state is handed on right after its frames, never ahead of them"

    whole = list(toy(overlap=True, gate=gate).stream(iter(pieces(samples, 1)), REFERENCE, observers=[gate, saver, Order()]))
    assert waiting[0] == 0 and all(1 <= w <= 2 for w in waiting[1:]), waiting
    assert len(saver.states) == 17 and saver.states[-1].published_frames == 50
    inline = list(toy().stream(iter(pieces(samples, 1)), REFERENCE))
    np.testing.assert_array_equal(frames_of(whole), frames_of(inline))
    for state in saver.states[3:6]:
        resumes_identically_toy(toy(), samples, whole, state, same=True)


@pytest.mark.parametrize("overlap", [False, True], ids=["inline", "overlap"])
def test_a_block_plan_resumes_from_its_stages_own_state(overlap: bool) -> None:
    samples = speechy(2.0)
    saver = Saver()
    whole = list(toy(overlap=overlap).stream(iter(pieces(samples, 1)), REFERENCE, observers=[saver]))
    assert [c.num_frames for c in whole[:3]] == [3, 3, 3] and sum(c.num_frames for c in whole) == 50
    state = saver.states[6]
    assert state.held == {} and state.next_chunk == ("B", 7) and state.published_frames == 21
    assert set(state.caches) == {"gen", "dec"} and state.nbytes == nbytes_of(state.values) + 16 + state.audio.nbytes
    for again in (toy(overlap=overlap), toy(overlap=not overlap)):
        resumes_identically_toy(again, samples, whole, state, same=True)
    forgetful = Saver()  # a stage that keeps nothing starts over: the resumed frames are its own
    forgotten = list(toy(keeps=False).stream(iter(pieces(samples, 1)), REFERENCE, observers=[forgetful]))
    np.testing.assert_array_equal(frames_of(forgotten), frames_of(whole))
    assert set(forgetful.states[6].caches) == {"dec"}
    resumes_identically_toy(toy(keeps=False), samples, whole, forgetful.states[6], same=False)


def resumes_identically_toy(pipeline: Pipeline, samples: np.ndarray, whole: list, state: Resumable, *, same: bool) -> None:
    start = state.audio.input_samples
    rest = list(pipeline.stream(iter(pieces(samples[:, start:], 2)), REFERENCE, resume=state))
    assert rest[0].first_frame == state.published_frames
    assert np.array_equal(frames_of(rest), frames_of(whole)[state.published_frames :]) == same
