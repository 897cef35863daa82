"""``--parallel steps=4[,decode]`` on the tiny LiveAvatar checkpoint gives the one-process frames bit for bit.

Rank i runs denoising step i of every block (one DiT forward per block), hands
the block to rank i+1 and goes on to the next block; the last step's rank
holds the final latents and sends them to the decode rank, or, without one,
decodes them itself; rank 0 publishes. One block per cache: the sink is
refreshed after the first block from latents only the last step's rank has.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from parallel_cases import family, launch, pipeline, render

from avatarstream.models.liveavatar.dit import S2VDiT
from avatarstream.runtime.parallel.layout import parse_parallel

STEPS = 4  # the tiny checkpoint's preset
CASES = {4: "liveavatar:steps=4", 5: "liveavatar:steps=4+decode"}


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory, tiny_liveavatar: Path) -> Path:
    out = tmp_path_factory.mktemp("parallel-steps")
    for nproc, case in CASES.items():
        launch(nproc, out, tiny_liveavatar, [case])
    return out


@pytest.fixture(scope="module")
def reference(tiny_liveavatar: Path) -> tuple[np.ndarray, int]:
    """One process's frames, and the DiT forwards it made for them."""
    torch.set_num_threads(1)  # as in each worker
    counts = {"forwards": 0}
    real = S2VDiT.forward

    def counted(self: S2VDiT, *args: object, **kwargs: object) -> torch.Tensor:
        counts["forwards"] += 1
        return real(self, *args, **kwargs)  # type: ignore[arg-type]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(S2VDiT, "forward", counted)
        fam = family("liveavatar", tiny_liveavatar)
        frames = render(fam, pipeline(fam))
    return frames, counts["forwards"]


def _count(out: Path, case: str, rank: int, what: str) -> int:
    return int((out / f"{case}.rank{rank}.{what}").read_text())


@pytest.mark.parametrize("nproc", sorted(CASES))
def test_steps_layout_matches_one_process(nproc: int, runs: Path, reference: tuple[np.ndarray, int]) -> None:
    case = CASES[nproc]
    expected, forwards = reference
    frames = np.load(runs / f"{case}.frames.npy")
    assert frames.dtype == np.uint8 and frames.shape == expected.shape
    np.testing.assert_array_equal(frames, expected)
    layout = parse_parallel(case.split(":")[1].replace("+", ","), nproc)
    blocks, rest = divmod(forwards, STEPS)
    assert rest == 0 and blocks >= 3  # one forward per step of every block; enough blocks for the pipeline to fill
    made = [_count(runs, case, r, "dit_forwards") for r in range(nproc)]
    assert made[:STEPS] == [blocks] * STEPS  # each step rank ran its one step of every block, nothing more
    assert made[STEPS:] == [0] * (nproc - STEPS)  # the decode rank ran no DiT
    decoded = [_count(runs, case, r, "decoded") for r in range(nproc)]
    finisher = layout.finishing_rank  # the decode rank, or the last step's rank when there is none
    assert finisher == (STEPS if layout.decode else STEPS - 1)
    assert decoded[finisher] >= blocks and sum(decoded) == decoded[finisher]
