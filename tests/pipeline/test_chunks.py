"""The chunk plan against DESIGN.md §4, checked from first principles for many geometries."""

from __future__ import annotations

import itertools

import pytest

from avatarstream.errors import InputError
from avatarstream.families.chunk_plan import ChunkPlan


def expected_order(num_n: int, interpolate: bool) -> list[str]:
    """N0, N1, I0, N2, I1, ... written out by hand from the design."""
    if not interpolate:
        return [f"N{k}" for k in range(num_n)]
    order = ["N0"]
    for k in range(1, num_n):
        order += [f"N{k}", f"I{k - 1}"]
    return order


GEOMETRIES = [
    (total, L, a, m)
    for total, L, a, m in itertools.product([1, 2, 7, 8, 9, 16, 17, 40, 41, 100], [1, 2, 4, 8, 13], [0, 1, 2, 3, 7], [0, 1, 2])
    if a < L and m <= L
]


@pytest.mark.parametrize(("total", "L", "a", "m"), GEOMETRIES)
def test_schedule_and_timeline(total: int, L: int, a: int, m: int) -> None:
    plan = ChunkPlan(L, a, m)
    chunks = list(plan.schedule(total))
    num_n = -(-total // L)
    assert [c.name for c in chunks] == expected_order(num_n, a > 0)
    assert plan.num_chunks(total) == (num_n, num_n - 1 if a > 0 else 0)

    published: list[int] = []
    generated: dict[str, object] = {}
    waiting: set[str] = set()
    for chunk in chunks:
        generated[chunk.name] = chunk
        # conditioning frames: motion frames from the previous N-chunk, or the two anchors
        if chunk.kind == "N":
            k = chunk.index
            assert chunk.window_start + chunk.window_frames == (k + 1) * L
            assert chunk.cond_frames == tuple(range(k * L - m, k * L))
            if k > 0:
                prev = generated[f"N{k - 1}"]
                for f in chunk.cond_frames:  # the last m frames of N(k-1), generated there
                    assert prev.window_start + m <= f < prev.window_end
            if a > 0 and k > 0:
                waiting.add(chunk.name)
        else:
            k = chunk.index
            assert f"N{k}" in generated and f"N{k + 1}" in generated
            assert chunk.cond_frames == ((k + 1) * L - 1, (k + 1) * L + a)
            assert chunk.window_frames == a + 2
            waiting.discard(f"N{k + 1}")
        assert len(waiting) <= 1, "at most one N-chunk may wait for its I-chunk"
        for piece in chunk.publishes:
            clipped = piece.clipped(total)
            if clipped is None:
                continue
            source = generated[f"{piece.source[0]}{piece.source[1]}"]
            # the frame at timeline t comes from window position t - window_start, never a conditioning slot
            assert source.window_start + clipped.offset == clipped.start
            for t in range(clipped.start, clipped.end):
                assert (t - source.window_start) not in source.cond_positions
            published.extend(range(clipped.start, clipped.end))
    assert published == list(range(total)), "published timeline must be every frame exactly once, in order"


@pytest.mark.parametrize(("L", "a"), [(8, 2), (5, 4), (6, 0)])
def test_published_timeline_composition(L: int, a: int) -> None:
    """N0 · I0 · N1[a:] · I1 · N2[a:] for three N-chunks, spelled out."""
    plan = ChunkPlan(L, a, 2)
    pieces = [(p.source, p.start, p.end) for c in plan.schedule(3 * L) for p in c.publishes]
    if a == 0:
        expected = [(("N", k), k * L, (k + 1) * L) for k in range(3)]
    else:
        expected = [(("N", 0), 0, L)]
        for k in range(2):
            expected += [(("I", k), (k + 1) * L, (k + 1) * L + a), (("N", k + 1), (k + 1) * L + a, (k + 2) * L)]
    assert pieces == expected


def test_contributions_tile_the_timeline() -> None:
    plan = ChunkPlan(8, 3, 2)
    spans = sorted(c.contributes for c in plan.schedule(40))
    assert spans[0][0] == 0 and spans[-1][1] == 40
    assert all(a[1] == b[0] for a, b in itertools.pairwise(spans))


def test_open_ended_schedule_continues() -> None:
    names = [c.name for c in itertools.islice(ChunkPlan(4, 1, 1).schedule(None), 7)]
    assert names == ["N0", "N1", "I0", "N2", "I1", "N3", "I2"]


@pytest.mark.parametrize(
    ("L", "a", "m", "needle"),
    [
        (0, 0, 0, "must be 1 or more"),
        (-4, 0, 0, "must be 1 or more"),
        (8, 8, 2, "must be 9 or more .* or keep 8 and pass --interp-frames 0 to 7"),
        (8, 9, 2, "must be 10 or more"),
        (8, -1, 2, "--interp-frames must be 0 or more"),
        (2, 0, 3, "the model's 3 motion frames it must be 3 or more"),
    ],
)
def test_bad_geometry_is_a_clear_error(L: int, a: int, m: int, needle: str) -> None:
    with pytest.raises(InputError, match=needle):
        ChunkPlan(L, a, m)


def test_every_too_short_chunk_gets_the_same_whole_range() -> None:
    """A user stepping --chunk-frames up from 0 meets one message naming the first valid value, not one constraint each."""
    for length in (0, 1, 2, 3):
        with pytest.raises(InputError) as err:
            ChunkPlan(length, 3, 2)
        assert f"--chunk-frames {length} is too short: with --interp-frames 3 and the model's 2 motion frames it must be 4 or more" in str(err.value)
    ChunkPlan(4, 3, 2)  # the value it names is valid


IN_TIMELINE = [(total, L, a, m, c) for total, L, a, m in GEOMETRIES if m >= 1 for c in sorted({1, m})]


@pytest.mark.parametrize(("total", "L", "a", "m", "c"), IN_TIMELINE)
def test_reference_in_the_timeline(total: int, L: int, a: int, m: int, c: int) -> None:
    """Wan I2V style: N0 is the first L+m timeline frames, its first c are the reference, all are published."""
    plan = ChunkPlan(L, a, m, first_cond=c)
    chunks = list(plan.schedule(total))
    first = chunks[0]
    assert (first.window_start, first.window_frames, first.cond_positions) == (0, L + m, tuple(range(c)))
    assert first.publishes[0].start == 0 and first.publishes[0].offset == 0
    num_n = max(-(-(total - m) // L), 1)
    assert [ch.name for ch in chunks] == expected_order(num_n, a > 0)
    assert plan.num_chunks(total) == (num_n, num_n - 1 if a > 0 else 0)
    covered: list[int] = []
    generated: dict[str, object] = {}
    for chunk in chunks:
        generated[chunk.name] = chunk
        if chunk.kind == "N" and chunk.index > 0:
            prev = generated[f"N{chunk.index - 1}"]
            assert chunk.cond_frames == tuple(range(prev.window_end - m, prev.window_end))  # N(k-1)'s last m frames
            assert all(f - prev.window_start not in prev.cond_positions for f in chunk.cond_frames)
        for piece in chunk.publishes:
            src = generated[f"{piece.source[0]}{piece.source[1]}"]
            assert piece.offset + (piece.end - piece.start) <= src.window_frames
            assert src.window_start + piece.offset == piece.start  # a piece is the window's frames at their own place
            covered.extend(range(piece.start, piece.end))
    assert covered[: min(total, len(covered))] == list(range(min(total, len(covered))))
    assert len(covered) >= total


def test_frame_layout_of_a_causal_video_vae() -> None:
    from avatarstream.pipeline.chunks import FrameLayout

    wan = FrameLayout(stride=4, first=1)
    assert [wan.video_start(t) for t in range(4)] == [0, 1, 5, 9]
    assert wan.video_range(0, 21) == (0, 81)  # an 81-frame chunk is 21 latent frames
    assert wan.window_video_range(18, 39) == (72, 153)  # the model sees the window's first latent as one frame
    assert [wan.timeline_frames(v) for v in (0, 1, 2, 5, 6, 81, 82)] == [0, 1, 2, 2, 3, 21, 22]
    plain = FrameLayout()
    assert plain.video_range(-2, 5) == (-2, 5) and plain.window_video_range(-2, 5) == (-2, 5) and plain.timeline_frames(7) == 7
