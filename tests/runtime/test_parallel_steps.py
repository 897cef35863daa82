"""LiveAvatar's layouts on the tiny checkpoint give the one-process frames bit for bit: ``steps=4[,decode]``, ``sp=2``, ``steps=2,sp=2[,decode]``.

Under steps=N rank i runs denoising step i of every block (one DiT forward
per block), hands the block to rank i+1 and goes on to the next block; the
last step's rank holds the final latents and sends them to the decode rank,
or, without one, decodes them itself; rank 0 publishes. Under sp=2 two ranks
share each block's 3 latent frames (2 + 1) and attend through the
all-to-alls, one of the 2 heads each, against step caches and a sink that
hold that head alone. Under steps=2,sp=2 ranks 0-1 run step 0 and ranks 2-3
step 1, each pair as under sp=2, each rank handing the block to the same sp
rank of the next step (the sampler makes 2 steps there). One block per
cache: the sink is refreshed after the first block from latents only the
last step's ranks have.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from parallel_cases import counted_render, launch

from avatarstream.runtime.parallel.layout import parse_parallel

CASES = {
    "liveavatar:steps=4": 4,
    "liveavatar:steps=4+decode": 5,
    "liveavatar-2steps:sp=2": 2,
    "liveavatar-2steps:steps=2+sp=2": 4,
    "liveavatar-2steps:steps=2+sp=2+decode": 5,
}
STEPS = {"liveavatar": 4, "liveavatar-2steps": 2}  # the sampler's steps of each reference (4: the tiny checkpoint's preset)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory, tiny_liveavatar: Path) -> Path:
    out = tmp_path_factory.mktemp("parallel-steps")
    for nproc in sorted(set(CASES.values())):  # one launch per process count
        launch(nproc, out, tiny_liveavatar, [case for case, n in CASES.items() if n == nproc])
    return out


@pytest.fixture(scope="module")
def references(tiny_liveavatar: Path) -> dict[str, tuple[np.ndarray, int]]:
    """Per reference: one process's frames, and the DiT forwards it made for them."""
    return {name: counted_render(name, tiny_liveavatar) for name in STEPS}


def _counts(out: Path, case: str, nproc: int, what: str) -> list[int]:
    return [int((out / f"{case}.rank{rank}.{what}").read_text()) for rank in range(nproc)]


@pytest.mark.parametrize("case", sorted(CASES))
def test_liveavatar_layout_matches_one_process(case: str, runs: Path, references: dict[str, tuple[np.ndarray, int]]) -> None:
    nproc, name = CASES[case], case.split(":")[0]
    expected, forwards = references[name]
    frames = np.load(runs / f"{case}.frames.npy")
    assert frames.dtype == np.uint8 and frames.shape == expected.shape
    np.testing.assert_array_equal(frames, expected)
    layout = parse_parallel(case.split(":")[1].replace("+", ","), nproc)
    blocks, rest = divmod(forwards, STEPS[name])
    assert rest == 0 and blocks >= 3  # one forward per step of every block; enough blocks for the pipeline to fill
    generating = layout.generating_ranks
    made = _counts(runs, case, nproc, "dit_forwards")
    assert made == [forwards // layout.steps] * generating + [0] * (nproc - generating)  # each rank its step's forwards; a decode rank none
    exchanged = _counts(runs, case, nproc, "all_to_all")
    if layout.sp > 1:  # every generating rank attended through the all-to-alls; a decode rank has no DiT
        assert min(exchanged[:generating]) > 0 and sum(exchanged[generating:]) == 0
    else:
        assert sum(exchanged) == 0
    decoded = _counts(runs, case, nproc, "decoded")  # frames sent to the lead: by the decode rank or the last step's first rank
    finisher = layout.finishing_rank
    assert finisher == (generating if layout.decode else (layout.steps - 1) * layout.sp)
    assert (decoded[finisher] >= blocks if finisher else decoded[finisher] == 0) and sum(decoded) == decoded[finisher]
