"""The tiny InfiniteTalk networks give identical outputs under every residency policy the runtime has."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
import torch
from infinitetalk_policy_cases import load, run
from safetensors.torch import load_file

from avatarstream.families.infinitetalk.networks import InfiniteTalkNetworks
from avatarstream.runtime.launch import torchrun_command

HERE = Path(__file__).parent


@pytest.fixture(scope="module")
def networks() -> InfiniteTalkNetworks:
    torch.set_num_threads(1)  # as in the torchrun workers: thread count changes the order of float sums
    return load()


@pytest.fixture(scope="module")
def resident(networks: InfiniteTalkNetworks) -> dict[str, torch.Tensor]:
    return {name: run(networks, name, "resident") for name in ("dit", "vae", "audio_encoder")}


@pytest.mark.parametrize("policy", ["offloaded", "streamed", "streamed:1", "streamed:3"])
def test_dit_equals_resident(policy: str, networks: InfiniteTalkNetworks, resident: dict[str, torch.Tensor]) -> None:
    assert torch.equal(run(networks, "dit", policy), resident["dit"])


@pytest.mark.parametrize("network", ["vae", "audio_encoder"])
def test_blockless_networks_offload(network: str, networks: InfiniteTalkNetworks, resident: dict[str, torch.Tensor]) -> None:
    assert torch.equal(run(networks, network, "offloaded"), resident[network])


def test_streamed_acts_on_the_transformer_blocks(networks: InfiniteTalkNetworks) -> None:
    assert len(networks.dit.blocks) == networks.dit.config.num_layers
    assert all(hasattr(block, "audio_cross_attn") for block in networks.dit.blocks)  # the adapter moves with its block


def test_sharded_over_two_processes_equals_resident(tmp_path: Path, resident: dict[str, torch.Tensor]) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("LOCAL_RANK", "RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(HERE), env.get("PYTHONPATH")]))
    done = subprocess.run(
        torchrun_command(2, [str(tmp_path)], module="infinitetalk_sharded_worker"), env=env, check=False, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    for rank in range(2):
        outputs = load_file(str(tmp_path / f"dit.rank{rank}.safetensors"))
        for name in ("sharded", "sharded_offload"):
            torch.testing.assert_close(outputs[name], resident["dit"], rtol=0, atol=1e-5)
