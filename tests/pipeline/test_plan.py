"""The plan protocol: what the loop asks of a plan, for the N/I plan and the block plan of block-causal models."""

from __future__ import annotations

import itertools

import pytest

from avatarstream.families.block_plan import BlockPlan
from avatarstream.families.chunk_plan import ChunkPlan
from avatarstream.pipeline.plan import Plan, schedule

BLOCKS = list(itertools.product([0, 1, 2, 3, 5, 6, 7, 8, 17, 100], [1, 2, 3, 4, 7]))


@pytest.mark.parametrize(("total", "B"), BLOCKS)
def test_blocks_cover_the_timeline_once_in_order(total: int, B: int) -> None:
    plan = BlockPlan(B)
    chunks = list(plan.schedule(total))
    assert chunks == list(schedule(plan, total))
    assert len(chunks) == plan.num_chunks(total) == -(-total // B)
    assert [c.name for c in chunks] == [f"B{k}" for k in range(len(chunks))]
    published: list[int] = []
    for k, chunk in enumerate(chunks):
        # back to back, no conditioning, nothing held: a causal family keeps its own state
        assert (chunk.window_start, chunk.window_frames, chunk.cond_positions, chunk.held) == (k * B, B, (), False)
        assert chunk.contributes == (k * B, (k + 1) * B)
        (piece,) = chunk.publishes  # published whole as soon as it is generated
        assert piece.source == chunk.key and piece.offset == 0 and (piece.start, piece.end) == chunk.contributes
        clipped = piece.clipped(total)
        assert clipped is not None, "a block that runs publishes something"
        published.extend(range(clipped.start, clipped.end))
        assert not plan.is_past_end(chunk, total)
    assert published == list(range(total))
    after = plan.next_after(chunks[-1]) if chunks else plan.first()
    assert plan.is_past_end(after, total)
    assert chunks[-1].window_end - total < B if chunks else True  # the last block reaches at most B - 1 frames past the end


def test_blocks_are_open_ended() -> None:
    plan = BlockPlan(3)
    names = [c.name for c in itertools.islice(plan.schedule(None), 5)]
    assert names == ["B0", "B1", "B2", "B3", "B4"]
    assert plan.max_held == 0
    assert plan.steady_frames() == (3, 6)


def test_block_keys_round_trip() -> None:
    plan = BlockPlan(4)
    for chunk in itertools.islice(plan.schedule(None), 6):
        assert plan.chunk(chunk.key) == chunk
    with pytest.raises(ValueError, match="only blocks"):
        plan.chunk(("N", 0))
    with pytest.raises(ValueError, match="start at 0"):
        plan.chunk(("B", -1))
    with pytest.raises(ValueError, match="1 timeline frame or more"):
        BlockPlan(0)


@pytest.mark.parametrize(("L", "a", "m", "c"), [(8, 2, 2, None), (8, 0, 2, None), (5, 4, 1, None), (6, 2, 2, 1), (6, 0, 3, 3)])
def test_chunk_plan_keys_round_trip(L: int, a: int, m: int, c: int | None) -> None:
    plan = ChunkPlan(L, a, m, first_cond=c)
    chunks = list(plan.schedule(10 * L))
    assert chunks == list(schedule(plan, 10 * L))
    for chunk in chunks:
        assert plan.chunk(chunk.key) == chunk
        assert chunk.held == (chunk.kind == "N")  # N-chunks condition later chunks and wait for their I-chunks
    with pytest.raises(ValueError):
        plan.chunk(("B", 0))
    with pytest.raises(ValueError, match="start at 0"):
        plan.chunk(("N", -1))


@pytest.mark.parametrize(("a", "held"), [(0, 1), (2, 2)])
def test_chunk_plan_holds_what_the_next_chunks_read(a: int, held: int) -> None:
    """At most ``max_held`` held chunks are ever needed: every conditioning frame and held piece is in the last ones held."""
    plan = ChunkPlan(6, a, 2)
    assert plan.max_held == held
    kept: list = []
    for chunk in plan.schedule(60):
        if chunk.cond_positions and chunk != plan.first():
            for frame in chunk.cond_frames:
                assert any(0 <= frame - h.window_start < h.window_frames and frame - h.window_start not in h.cond_positions for h in kept), frame
        if chunk.held:
            kept = [*kept, chunk][-plan.max_held :]
        for piece in chunk.publishes:
            assert piece.source == chunk.key or piece.source in [h.key for h in kept]


@pytest.mark.parametrize("plan", [ChunkPlan(6, 2, 2), ChunkPlan(6, 0, 2, first_cond=1), BlockPlan(3)], ids=repr)
def test_steady_frames_are_what_each_later_chunk_adds(plan: Plan) -> None:
    """Past the first, each primary chunk (N or block) moves the end of the timeline by one steady chunk's frames."""
    primary = [c for c in schedule(plan, 100) if c.kind in ("N", "B")]
    start, end = plan.steady_frames()
    assert end == primary[1].window_end
    assert all(b.window_end - a.window_end == end - start for a, b in itertools.pairwise(primary[1:]))
