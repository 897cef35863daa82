"""The sizing rule: a GPU's peak is the larger of session start and chunk loop, judged against the card and its headroom."""

from __future__ import annotations

import pytest

from avatarstream.weights.sizing import HEADROOM, Configuration, GpuClass, Option, choose, options_table, verdict

CARD = GpuClass("test", 100.0, "none")


def option(gpus: int, weights: float, caches: float = 0.0, visit: float = 0.0, parallel: str = "") -> Option:
    return Option(gpus, parallel, "default=resident", (("weights", weights),), (("caches", caches),), (("text", visit),) if visit else ())


def test_the_peak_is_the_larger_of_session_start_and_the_chunk_loop() -> None:
    loop_bound, start_bound = option(1, 30, caches=40, visit=10), option(1, 30, caches=5, visit=10)
    assert (loop_bound.need_gib, start_bound.need_gib) == (70, 40)
    assert loop_bound.arithmetic() == "weights 30.0 + caches 40.0 = **70.0**"
    assert start_bound.arithmetic().endswith("at session start the weights and text 10.0: **40.0**")


def test_fits_leaves_the_headroom_tight_eats_into_it_and_past_the_card_is_no() -> None:
    budget = CARD.capacity_gib * (1 - HEADROOM)
    assert [verdict(option(1, gib), CARD) for gib in (budget, budget + 0.1, CARD.capacity_gib, CARD.capacity_gib + 0.1)] == ["fits", "tight", "tight", "no"]


def test_the_choice_is_the_first_that_fits_else_the_first_tight_one_among_one_or_several_gpus() -> None:
    big, tight, small, split = option(1, 120), option(1, 95), option(1, 50), option(2, 60, parallel="sp=2")
    assert choose([big, tight, small, split], CARD, several=False) is small
    assert choose([big, tight], CARD, several=False) is tight
    assert choose([big], CARD, several=False) is None
    assert choose([big, tight, small, split], CARD, several=True) is split


def test_one_options_table_per_family_needs_the_same_options_at_each_setting() -> None:
    a = Configuration("f", "a", (option(1, 10), option(2, 5, parallel="sp=2")))
    b = Configuration("f", "b", (option(1, 20), option(2, 10, parallel="sp=2")))
    assert "| 2 | `sp=2` | `default=resident` | weights 5.0 + caches 0.0 = **5.0** | weights 10.0 + caches 0.0 = **10.0** |" in options_table([a, b])
    with pytest.raises(AssertionError):
        options_table([a, Configuration("f", "c", (option(1, 20),))])
