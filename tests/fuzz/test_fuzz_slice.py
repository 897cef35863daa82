"""The fuzz targets of ``make fuzz`` on every CI run, briefly and the same way each time: each target's seeds and a few
derandomized mutations of them (bytes flipped, inserted, cut, spliced with the target's dictionary words), each held to
the contract (fuzz/contract.py). The searching happens in ``make fuzz``; this keeps the targets themselves working."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fuzz.contract import Breach, check
from fuzz.registry import WHERE, load

MUTANTS = 25


@pytest.fixture(autouse=True)
def _quiet() -> Iterator[None]:
    logging.disable(logging.WARNING)  # the multipart target's server logs each session it opens
    yield
    logging.disable(logging.NOTSET)


def mutate(seed: bytes, words: tuple[str, ...], data: st.DataObject) -> bytes:
    """A few byte-level edits of ``seed``, as libFuzzer's first mutations would make."""
    out = bytearray(seed)
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(0, len(out)))
        edit = data.draw(st.sampled_from(["flip", "insert", "cut", "word", "truncate"]))
        if edit == "flip" and at < len(out):
            out[at] ^= 1 << data.draw(st.integers(0, 7))
        elif edit == "insert":
            out[at:at] = data.draw(st.binary(min_size=1, max_size=8))
        elif edit == "cut":
            del out[at : at + data.draw(st.integers(1, 64))]
        elif edit == "word" and words:
            out[at:at] = data.draw(st.sampled_from(words)).encode("latin-1", "replace")
        elif edit == "truncate":
            del out[at:]
    return bytes(out)


@pytest.mark.filterwarnings("ignore::UserWarning:PIL")  # Pillow warns of the damage it skips
@pytest.mark.parametrize("name", list(WHERE))
def test_target_keeps_its_contract(name: str, tmp_path: Path) -> None:
    target = load(name)
    with target.prepare(tmp_path) as (run, seeds):
        refusals = [check(run, seed, target.bounds) for seed in seeds]
        assert None in refusals, f"every seed is refused, so mutants start from nothing good: {refusals}"

        @settings(max_examples=MUTANTS, derandomize=True, database=None, deadline=None)
        @given(data=st.data())
        def mutants(data: st.DataObject) -> None:
            seed = data.draw(st.sampled_from(seeds))
            try:
                check(run, mutate(seed, target.words, data), target.bounds)
            except Breach as breach:
                raise AssertionError(f"{name}: {breach}") from breach

        mutants()
