"""FSDP2 over 2 gloo processes (torchrun inside the test) gives the outputs of one process."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.torch import load_file

from avatarstream.runtime.launch import torchrun_command
from runtime.helpers import deep_pipeline, dit_cases, render

HERE = Path(__file__).parent


@pytest.fixture(scope="module")
def sharded_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("fsdp")
    env = {k: v for k, v in os.environ.items() if k not in ("LOCAL_RANK", "RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(HERE), env.get("PYTHONPATH")]))
    command = torchrun_command(2, [str(out)], module="fsdp_worker")  # the launcher --nproc uses
    done = subprocess.run(command, env=env, check=False, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return out


def test_sharded_dits_match_one_process(sharded_run: Path) -> None:
    ranks = [load_file(str(sharded_run / f"dits.rank{r}.safetensors")) for r in range(2)]
    for name, (module, inputs) in dit_cases().items():
        with torch.inference_mode():
            expected = module.network(*inputs)
        for outputs in ranks:
            torch.testing.assert_close(outputs[name], torch.cat([expected, expected]), rtol=0, atol=1e-5)


def test_sharded_pipeline_matches_resident(sharded_run: Path) -> None:
    frames = np.load(sharded_run / "frames.npy")
    np.testing.assert_array_equal(frames, render(deep_pipeline()))  # one thread here and in each worker (conftest)
    runtime = (sharded_run / "runtime.txt").read_text()
    assert "'a2v_dit': 'sharded'" in runtime and "sequential_only=True" in runtime  # stages of sharded modules must not overlap
    assert "collective_finals=True" in runtime  # the sharded SR DiT is a final stage: rank 1 runs it with rank 0
