"""Every --parallel layout over 2 and 4 gloo processes gives the one-process forward and frames.

Each torchrun launch runs several layouts in one process group (``parallel_worker.py``);
the references are computed here, in one process, from the same seeds.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import numpy as np
import pytest
import torch
from parallel_cases import family, forward, pipeline, render
from safetensors.torch import load_file

from avatarstream.families.infinitetalk.layout import WeightsLayout
from avatarstream.runtime.launch import torchrun_command

HERE = Path(__file__).parent
CASES = {
    2: ["demo:sp=2", "demo:decode", "infinitetalk:sp=2", "infinitetalk:cfg=2", "infinitetalk:decode"],
    4: ["demo:sp=4", "infinitetalk:sp=4", "infinitetalk:sp=2+cfg=2", "infinitetalk-sharded:sp=2+cfg=2", "infinitetalk:cfg=3+decode"],
}


def launch(nproc: int, out: Path, weights: Path, cases: list[str]) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("LOCAL_RANK", "RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(HERE), env.get("PYTHONPATH")]))
    command = torchrun_command(nproc, [str(out), str(weights), *cases], module="parallel_worker")
    done = subprocess.run(command, env=env, check=False, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory, tiny_original: WeightsLayout) -> tuple[Path, Path]:
    out = tmp_path_factory.mktemp("parallel")
    weights = tiny_original.base.parent
    for nproc, cases in CASES.items():
        launch(nproc, out, weights, cases)
    return out, weights


@pytest.fixture(scope="module")
def references(runs: tuple[Path, Path]) -> dict[str, tuple[torch.Tensor, np.ndarray]]:
    torch.set_num_threads(1)  # as in each worker
    found = {}
    for name in ("demo", "infinitetalk"):
        fam = family(name, runs[1])
        built = pipeline(fam)
        found[name] = (forward(fam), render(fam, built))
    return found


def _psnr(a: np.ndarray, b: np.ndarray) -> float:
    mse = float(np.mean((a.astype(np.float64) - b) ** 2))
    return float("inf") if mse == 0 else 10 * np.log10(255**2 / mse)


@pytest.mark.parametrize("case", [(n, c) for n, cases in CASES.items() for c in cases], ids=lambda c: f"{c[0]}proc-{c[1]}")
def test_layout_matches_one_process(case: tuple[int, str], runs: tuple[Path, Path], references: dict[str, tuple[torch.Tensor, np.ndarray]]) -> None:
    nproc, name = case
    out = runs[0]
    expected_forward, expected_frames = references[name.split(":")[0].removesuffix("-sharded")]
    generating = [r for r in range(nproc) if (out / f"{name}.rank{r}.safetensors").exists()]
    assert len(generating) == nproc - ("decode" in name)  # every generating rank made the forward; the decode rank none
    for rank in generating:
        got = load_file(str(out / f"{name}.rank{rank}.safetensors"))["forward"]
        torch.testing.assert_close(got, expected_forward, rtol=0, atol=1e-5)
    frames = np.load(out / f"{name}.frames.npy")
    assert frames.shape == expected_frames.shape
    assert np.array_equal(frames, expected_frames) or _psnr(frames, expected_frames) >= 50
    exchanged = [int((out / f"{name}.rank{r}.all_to_all").read_text()) for r in range(nproc)]
    if "sp=" in name:  # the sequence really was split: the generating ranks swapped heads for tokens
        assert all(exchanged[r] > 0 for r in generating)
    else:
        assert not any(exchanged)
    decoded = [int((out / f"{name}.rank{r}.decoded").read_text()) for r in range(nproc)]
    assert decoded == ([0] * (nproc - 1) + [decoded[-1]] if "decode" in name else [0] * nproc)
    assert ("decode" not in name) or decoded[-1] >= 2  # the decode rank made every stretch (N0, N1 ...), rank 0 none
