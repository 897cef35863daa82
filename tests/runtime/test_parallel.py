"""Every --parallel layout over 2 and 4 gloo processes gives the one-process forward and frames, and splits the work it says.

sp and decode layouts give the one-process frames bit for bit; cfg layouts within one level of 255 (each rank makes its
guidance predictions apart instead of in one batched forward, which rounds differently). Under cfg, every prediction of
a step is made by one rank of the guidance group and one all-gather per step shares them.

Each torchrun launch runs several layouts in one process group (``parallel_worker.py``);
the references are computed here, in one process, from the same seeds.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from parallel_cases import counting_predictions, family, forward, launch, pipeline, render
from safetensors.torch import load_file

from avatarstream.families.infinitetalk.layout import WeightsLayout
from avatarstream.models.infinitetalk.predict import DiTPredictor
from avatarstream.runtime.parallel.layout import parse_parallel

CFG_MIN_PSNR_DB = 80  # measured 88-91 dB for the cfg layouts below (README, docs/parallel.md)
CASES = {
    2: ["demo:sp=2", "demo:decode", "infinitetalk:sp=2", "infinitetalk:cfg=2", "infinitetalk:decode"],
    4: ["demo:sp=4", "infinitetalk:sp=4", "infinitetalk:sp=2+cfg=2", "infinitetalk-sharded:sp=2+cfg=2", "infinitetalk:cfg=3+decode"],
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory, tiny_original: WeightsLayout) -> tuple[Path, Path]:
    out = tmp_path_factory.mktemp("parallel")
    weights = tiny_original.base.parent
    for nproc, cases in CASES.items():
        launch(nproc, out, weights, cases)
    return out, weights


@pytest.fixture(scope="module")
def references(runs: tuple[Path, Path]) -> dict[str, tuple[torch.Tensor, np.ndarray, int]]:
    """Per family: one process's forward, frames, and the DiT predictions it computed for them."""
    torch.set_num_threads(1)  # as in each worker
    found = {}
    for name in ("demo", "infinitetalk"):
        counts = {"predictions": 0}
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(DiTPredictor, "_forward", counting_predictions(counts))
            fam = family(name, runs[1])
            built = pipeline(fam)
            expected = forward(fam, built)
            assert expected is not None
            found[name] = (expected, render(fam, built), counts["predictions"])
    return found


def _psnr(a: np.ndarray, b: np.ndarray) -> float:
    mse = float(np.mean((a.astype(np.float64) - b) ** 2))
    return float("inf") if mse == 0 else 10 * np.log10(255**2 / mse)


@pytest.mark.parametrize("case", [(n, c) for n, cases in CASES.items() for c in cases], ids=lambda c: f"{c[0]}proc-{c[1]}")
def test_layout_matches_one_process(case: tuple[int, str], runs: tuple[Path, Path], references: dict[str, tuple[torch.Tensor, np.ndarray, int]]) -> None:
    nproc, name = case
    out = runs[0]
    expected_forward, expected_frames, _ = references[name.split(":")[0].removesuffix("-sharded")]
    generating = [r for r in range(nproc) if (out / f"{name}.rank{r}.safetensors").exists()]
    assert len(generating) == nproc - ("decode" in name)  # every generating rank made the forward; the decode rank none
    for rank in generating:
        got = load_file(str(out / f"{name}.rank{rank}.safetensors"))["forward"]
        torch.testing.assert_close(got, expected_forward, rtol=0, atol=1e-5)
    frames = np.load(out / f"{name}.frames.npy")
    assert frames.shape == expected_frames.shape
    if "cfg=" in name:  # each rank runs its predictions apart, not batched with the others: rounding differs, within one level
        assert np.abs(frames.astype(np.int16) - expected_frames).max() <= 1 and _psnr(frames, expected_frames) >= CFG_MIN_PSNR_DB
    else:
        np.testing.assert_array_equal(frames, expected_frames)
    exchanged = [int((out / f"{name}.rank{r}.all_to_all").read_text()) for r in range(nproc)]
    if "sp=" in name:  # the sequence really was split: the generating ranks swapped heads for tokens
        assert all(exchanged[r] > 0 for r in generating)
    else:
        assert not any(exchanged)
    decoded = [int((out / f"{name}.rank{r}.decoded").read_text()) for r in range(nproc)]
    assert decoded == ([0] * (nproc - 1) + [decoded[-1]] if "decode" in name else [0] * nproc)
    assert ("decode" not in name) or decoded[-1] >= 2  # the decode rank made every stretch (N0, N1 ...), rank 0 none


def _count(out: Path, case: str, rank: int, what: str) -> int:
    return int((out / f"{case}.rank{rank}.{what}").read_text())


@pytest.mark.parametrize("case", [(n, c) for n, cases in CASES.items() for c in cases if c.startswith("infinitetalk")], ids=lambda c: f"{c[0]}proc-{c[1]}")
def test_guidance_layouts_split_the_predictions(
    case: tuple[int, str], runs: tuple[Path, Path], references: dict[str, tuple[torch.Tensor, np.ndarray, int]]
) -> None:
    """cfg=C: each prediction of a step is computed by one rank of the guidance group (per sequence shard), and one
    all-gather per step shares them; without cfg every generating rank computes every prediction and gathers nothing."""
    nproc, name = case
    out, one_process = runs[0], references["infinitetalk"][2]
    layout = parse_parallel(name.split(":")[1].replace("+", ","), nproc)
    generating = [r for r in range(nproc) if r != layout.decode_rank]
    made = [_count(out, name, r, "predictions") for r in generating]
    gathers = [_count(out, name, r, "all_gather") for r in generating]
    if layout.decode_rank is not None:
        assert _count(out, name, layout.decode_rank, "predictions") == 0
    steps, per_step = one_process // 3, 3  # text and audio guidance on: three predictions in every step
    assert one_process == per_step * steps > 0
    if layout.cfg == 1:
        assert made == [one_process] * len(generating)
        assert gathers == [0] * len(generating)
        return
    shares = [len(range(c, per_step, layout.cfg)) * steps for c in range(layout.cfg)]
    assert sorted(made) == sorted(shares * layout.sp), f"predictions per rank {made}, one process {one_process}"
    assert sum(made) == one_process * layout.sp  # no prediction made twice within a sequence shard
    assert gathers == [steps] * len(generating)
