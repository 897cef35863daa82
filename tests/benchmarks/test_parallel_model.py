"""The speed-up model of --parallel layouts, and the pieces of the parallel scenario that run in one process."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from avatarstream.benchmarks.parallel_bench import BlockCounter, render_options
from avatarstream.benchmarks.parallel_model import ChunkWork, Link, layouts, predict, table
from avatarstream.families.assemble import build_pipeline
from avatarstream.families.demo import DemoFamily
from avatarstream.models.demo import DemoConfig
from avatarstream.runtime.parallel.layout import ParallelLayout
from avatarstream.sources.pcm import PcmBlock

WORK = ChunkWork(init_s=0.5, chunk_s=1.0, dit_s=0.8, final_s=0.3, frames_per_chunk=30, predictions=3, block_values=4e8, block_calls=120,
                 forwards=12, output_values=1e6, value_bytes=2, stretch_bytes=3e7, heads=40)  # fmt: skip
FAST = Link(bytes_per_s=1e11, latency_s=1e-5)


def test_one_process_is_generate_then_finish() -> None:
    with pytest.raises(AssertionError):
        predict(WORK, ParallelLayout(2), None, None)  # an sp layout without the all-to-all's cost
    assert layouts(1, 40, 3) == []  # one process splits nothing


def test_sp_divides_the_dit_and_pays_its_all_to_alls() -> None:
    got = predict(WORK, ParallelLayout(sp=4), FAST, None, FAST)
    moved = 4 * 4e8 * 2 / 4 * 3 / 4
    comm = 4 * 120 * 1e-5 + moved / 1e11 + 12 * 1e-5 + 1e6 * 2 * 3 / 4 / 1e11
    assert got.comm_s == pytest.approx(comm, abs=1e-5)
    assert got.chunk_s == pytest.approx(0.2 + 0.8 / 4 + comm + 0.3, abs=1e-5)
    assert got.fps == pytest.approx(30 / got.chunk_s, rel=1e-3)
    slow = predict(WORK, ParallelLayout(sp=4), Link(1e8, 1e-3), None, Link(1e8, 1e-3))
    assert slow.fps < got.fps  # a slower link costs speed


def test_cfg_shares_predictions_and_decode_overlaps_finals() -> None:
    cfg3 = predict(WORK, ParallelLayout(cfg=3), None, None)
    assert cfg3.chunk_s == pytest.approx(0.2 + 0.8 / 3 + 0.3, abs=1e-5)
    cfg2 = predict(WORK, ParallelLayout(cfg=2), None, None)
    assert cfg2.chunk_s == pytest.approx(0.2 + 0.8 * 2 / 3 + 0.3, abs=1e-5)  # ceil(3/2) = 2 of 3 predictions on each rank
    decode = predict(WORK, ParallelLayout(cfg=3, decode=True), None, FAST)
    assert decode.chunk_s == pytest.approx(max(0.2 + 0.8 / 3, 0.3 + 2 * 1e-5 + 3e7 / 1e11), abs=1e-5)
    assert decode.ttff_s > decode.chunk_s  # the first chunk waits for its own finals


def test_steps_pipeline_runs_one_step_per_rank() -> None:
    """steps=4: each rank runs the unsplit chunk stages and a quarter of the DiT; the slowest rank sets the pace."""
    work = dataclasses.replace(WORK, predictions=1, split_steps=4, latent_bytes=4e5)
    hand = 1e-5 + 4e5 / 1e11
    finals = 0.3 + 1e-5 + 3e7 / 1e11
    decode = predict(work, ParallelLayout(steps=4, decode=True), None, FAST)
    assert decode.chunk_s == pytest.approx(max(0.2 + 0.8 / 4 + 2 * hand, finals), abs=1e-5)  # the decode rank is the slowest here
    alone = predict(work, ParallelLayout(steps=4), None, FAST)
    assert alone.chunk_s == pytest.approx(0.2 + 0.8 / 4 + hand + finals, abs=1e-5)  # the last step's rank decodes too
    one = WORK.chunk_s + WORK.final_s
    assert one / alone.chunk_s > 1 and decode.fps > alone.fps
    assert decode.ttff_s == pytest.approx(0.5 + 1.0 + 3 * hand + finals, abs=1e-4)  # the first block through every step in turn
    assert decode.gpus == 5 and alone.gpus == 4
    with pytest.raises(AssertionError):
        predict(WORK, ParallelLayout(steps=4), None, FAST)  # a model whose steps cannot split
    assert {layout.text() for layout in layouts(5, heads=40, predictions=1, split_steps=4)} >= {"steps=4,decode"}
    assert "steps=4" in {layout.text() for layout in layouts(4, heads=40, predictions=1, split_steps=4)}
    assert not any(layout.steps > 1 for layout in layouts(4, heads=40, predictions=1))


def test_steps_with_sp_split_each_step_over_its_group() -> None:
    """steps=4,sp=2: each rank runs an eighth of the DiT and pays the all-to-alls of its step's forwards."""
    work = dataclasses.replace(WORK, predictions=1, split_steps=4, latent_bytes=4e5)
    hand = 1e-5 + 4e5 / 1e11
    finals = 0.3 + 1e-5 + 3e7 / 1e11
    share = 1 / 4  # of the forwards: one step's
    split_comm = 4 * 120 * share * 1e-5 + 4 * 4e8 * share * 2 / 2 / 2 / 1e11 + 12 * share * 1e-5 + 1e6 * share * 2 / 2 / 1e11
    got = predict(work, ParallelLayout(sp=2, steps=4), FAST, FAST, FAST)
    assert got.chunk_s == pytest.approx(0.2 + 0.8 / 8 + split_comm + hand + finals, abs=1e-5)
    assert got.comm_s == pytest.approx(split_comm + hand + finals - 0.3, abs=1e-5) and got.gpus == 8
    assert got.fps > predict(work, ParallelLayout(steps=4), None, FAST).fps
    assert "steps=4,sp=2" in {layout.text() for layout in layouts(8, heads=40, predictions=1, split_steps=4)}
    assert not any(layout.steps > 1 for layout in layouts(12, heads=40, predictions=1, split_steps=4))  # sp=3 does not divide 40 heads


def test_layouts_follow_heads_and_predictions() -> None:
    texts = {layout.text() for layout in layouts(4, heads=12, predictions=1)}
    assert texts == {"sp=4,cfg=1", "sp=3,cfg=1,decode"}  # no cfg without guidance
    assert {layout.text() for layout in layouts(3, heads=12, predictions=1)} == {"sp=3,cfg=1", "sp=2,cfg=1,decode"}
    assert {layout.text() for layout in layouts(8, heads=40, predictions=3)} == {"sp=8,cfg=1", "sp=4,cfg=2"}  # 7 divides neither heads nor 3


def test_table_marks_extrapolated_links() -> None:
    rows = table(WORK, [2, 8], {2: FAST}, FAST)
    by = {(r["gpus"], r["layout"]): r for r in rows}
    assert by[(2, "sp=2,cfg=1")]["extrapolated"] is False
    assert by[(8, "sp=8,cfg=1")]["extrapolated"] is True
    assert by[(2, "sp=1,cfg=1,decode")]["extrapolated"] is False


def test_render_takes_the_bench_options_it_knows() -> None:
    argv = ["bench", "--scenario", "parallel", "--model", "demo", "--seconds=10", "--out", "x", "--threads", "1", "--repeats", "2"]
    assert render_options(argv) == ["--model", "demo", "--threads", "1"]


def test_block_counter_sees_every_forward_of_the_dit() -> None:
    family = DemoFamily.random(DemoConfig.tiny())
    pipeline = build_pipeline(family, torch.device("cpu"), {"chunk_frames": 6, "interp_frames": 2, "steps": 3})
    counter = BlockCounter(family.modules["a2v_dit"].network)
    frames = sum(c.num_frames for c in pipeline.stream([PcmBlock(np.zeros((1, 16000), np.float32), 16000)], np.zeros((64, 64, 3), np.uint8)))
    counter.close()
    layers = family.config.dit.layers
    assert frames == 25
    assert counter.forwards % 3 == 0 and counter.calls == counter.forwards * layers  # 3 steps per chunk, every block once per forward
    assert counter.batch == 1 and counter.value_bytes == 4 and counter.values > 0
