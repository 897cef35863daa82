"""The pieces of --parallel that need no second process: layouts, splits, messages, the control channel's wire format."""

from __future__ import annotations

import numpy as np
import pytest

from avatarstream.errors import InputError
from avatarstream.families.liveavatar.sequence_parallel import check_split
from avatarstream.runtime.parallel.control import pack, unpack
from avatarstream.runtime.parallel.guidance import check_guidance_split
from avatarstream.runtime.parallel.layout import ParallelLayout, parse_parallel
from avatarstream.runtime.parallel.ulysses import check_heads, frame_counts


@pytest.mark.parametrize(("text", "nproc", "layout"), [
    ("sp=4", 4, ParallelLayout(4, 1, False)),
    ("sp=2,cfg=2", 4, ParallelLayout(2, 2, False)),
    ("cfg=3, decode", 4, ParallelLayout(1, 3, True)),
    ("decode", 2, ParallelLayout(1, 1, True)),
    (None, 8, ParallelLayout()),
    ("steps=4", 4, ParallelLayout(steps=4)),
    ("steps=4,decode", 5, ParallelLayout(decode=True, steps=4)),
    ("steps=2,sp=2", 4, ParallelLayout(sp=2, steps=2)),
    ("sp=2,steps=2,decode", 5, ParallelLayout(sp=2, decode=True, steps=2)),
])  # fmt: skip
def test_layouts(text: str | None, nproc: int, layout: ParallelLayout) -> None:
    parsed = parse_parallel(text, nproc)
    assert parsed == layout
    assert parsed.decode_rank == (layout.sp * layout.cfg * layout.steps if layout.decode else None)
    assert parsed.last_step_rank == (layout.steps - 1) * layout.sp  # rank 0 hands the final latents on unless the steps are split
    assert parsed.finishing_rank == (parsed.decode_rank if layout.decode else parsed.last_step_rank)
    if text is not None:
        assert parse_parallel(parsed.text(), nproc) == parsed  # what the report names parses back to the layout


def test_frames_split_contiguously_and_evenly() -> None:
    assert frame_counts(9, 4) == [3, 2, 2, 2]
    assert frame_counts(8, 2) == [4, 4]
    assert sum(frame_counts(21, 8)) == 21 and max(frame_counts(21, 8)) - min(frame_counts(21, 8)) == 1


def test_heads_that_do_not_divide_are_refused_with_the_choices() -> None:
    check_heads(40, 8, "the DiT")
    with pytest.raises(InputError, match=r"the DiT has 40 attention heads, which sp=3 does not divide; use sp = 1 or 2 or 4 or 5 or 8 or 10 or 20 or 40"):
        check_heads(40, 3, "the DiT")


def test_liveavatar_sp_needs_heads_and_block_frames_to_share() -> None:
    check_split(40, 2)
    with pytest.raises(InputError, match=r"the LiveAvatar DiT has 2 attention heads, which sp=3 does not divide; use sp = 1 or 2"):
        check_split(2, 3)
    with pytest.raises(
        InputError, match=r"a LiveAvatar block has 3 latent frames, which sp=4 ranks cannot share \(each rank takes whole frames\); use sp <= 3"
    ):
        check_split(40, 4)


def test_guidance_groups_need_enough_predictions() -> None:
    check_guidance_split(3, 3)
    check_guidance_split(1, 1)
    with pytest.raises(InputError, match=r"cfg=3: a step makes 2 predictions; use cfg=2"):
        check_guidance_split(2, 3)
    with pytest.raises(InputError, match=r"cfg=2: guidance is off \(one prediction per step\); use cfg=1 or split the sequence with sp"):
        check_guidance_split(1, 2)


def test_control_messages_carry_arrays_without_pickle() -> None:
    image = np.arange(2 * 3 * 3, dtype=np.uint8).reshape(2, 3, 3)
    data = pack({"prompt": "hi", "seed": 4}, image)
    assert b"pickle" not in data and data.startswith(b"{")
    header, back = unpack(data)
    assert header["prompt"] == "hi" and header["seed"] == 4
    assert back is not None and back.dtype == np.uint8 and np.array_equal(back, image)
    assert unpack(pack({"end": True})) == ({"end": True}, None)
