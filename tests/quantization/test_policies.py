"""Quantized weights under every residency policy: the same outputs as resident, moved in their quantized bytes; FSDP2
sharding of them refused in one line (it cannot split torchao's tensors), and the modes each device gets."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.distributed as dist
from torch import nn

from avatarstream.errors import InputError
from avatarstream.families.quantization import QUANTIZE_MODES, quantize_loaded
from avatarstream.runtime import quantize
from avatarstream.runtime.module import Module
from avatarstream.runtime.packing import PackedWeights, held_bytes, module_tensors
from avatarstream.runtime.residency import Runtime
from avatarstream.runtime.sharding import Sharded
from runtime.helpers import deep_family, deep_pipeline, render

CPU = torch.device("cpu")


class Blocks(nn.Module):
    """A stand-in DiT: linear layers in blocks (what ``streamed`` streams) and a norm outside them."""

    def __init__(self) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(64)
        self.blocks = nn.ModuleList(nn.Sequential(nn.Linear(64, 128), nn.GELU(), nn.Linear(128, 64)) for _ in range(3))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for block in self.blocks:
            x = x + block(self.norm(x))
        return x


def quantized(mode: str) -> Module:
    network = Blocks().eval().requires_grad_(False)
    quantize.quantize_network(network, mode, CPU, "dit")
    return Module("dit", network)


def test_the_modes_are_the_options_choices() -> None:
    assert QUANTIZE_MODES == quantize.MODES


@pytest.mark.parametrize("mode", QUANTIZE_MODES)
@pytest.mark.parametrize("policy", ["offloaded", "streamed:2", "streamed:1"])
def test_a_policy_gives_the_outputs_of_the_network_it_moves(mode: str, policy: str) -> None:
    torch.manual_seed(0)
    module = quantized(mode)
    x = torch.randn(4, 64)
    with torch.inference_mode():
        expected = module.network(x)
    runtime = Runtime(CPU, {"dit": policy})
    residency = runtime.residency(module)
    for _ in range(3):  # acquire and release repeatedly: the rebuilt weights stay the module's own parameters
        residency.prefetch()
        residency.acquire()
        with torch.inference_mode():
            torch.testing.assert_close(module.network(x), expected, rtol=0, atol=0)
        residency.release()
    assert all(isinstance(p, nn.Parameter) for p in module.network.parameters())
    assert all(quantize.is_quantized(block[0].weight) for block in module.network.blocks)


@pytest.mark.parametrize("mode", QUANTIZE_MODES)
def test_a_pack_holds_the_quantized_bytes(mode: str) -> None:
    plain = Blocks()
    full = PackedWeights(module_tensors(plain), lambda n: torch.empty(n, dtype=torch.uint8)).nbytes
    module = quantized(mode)
    pack = PackedWeights(module_tensors(module.network), lambda n: torch.empty(n, dtype=torch.uint8))
    held = sum(held_bytes(t) for t in module_tensors(module.network))
    assert held <= pack.nbytes < held + 256 * 64  # the data and scales, each aligned to 256 bytes
    assert pack.nbytes < 0.4 * full  # 1 byte per weight instead of 4, plus a float32 scale per row


def test_offloaded_and_streamed_moves_fewer_bytes_and_the_same_frames() -> None:
    """The demo pipeline with its DiTs in int8: frames of every policy equal the resident ones, copies shrink."""

    def run(residency: dict[str, str], mode: str | None) -> tuple[np.ndarray, int]:
        family = deep_family()
        quantize_loaded(family.modules, mode, None, ("a2v_dit", "sr_dit"), CPU)
        pipeline = deep_pipeline(residency, family)
        return render(pipeline), pipeline.runtime.h2d_bytes

    frames, _ = run({}, "int8")
    streamed = {"a2v_dit": "streamed:2", "sr_dit": "streamed:1", "default": "offloaded"}
    for residency in ({"default": "offloaded"}, streamed):
        moved_frames, moved = run(residency, "int8")
        np.testing.assert_array_equal(moved_frames, frames)
        _, unquantized = run(residency, None)
        assert moved < 0.75 * unquantized  # the DiTs dominate what moves; only their linear weights shrink


@pytest.fixture
def one_process_group(tmp_path: Path) -> Iterator[None]:
    dist.init_process_group("gloo", store=dist.FileStore(str(tmp_path / "store"), 1), rank=0, world_size=1)
    yield
    dist.destroy_process_group()


@pytest.mark.parametrize("mode", QUANTIZE_MODES)
def test_fsdp2_cannot_shard_torchaos_tensors_so_sharded_refuses_them(mode: str, one_process_group: None) -> None:
    from torch.distributed.fsdp import CPUOffloadPolicy, fully_shard

    module = quantized(mode)
    with pytest.raises(NotImplementedError):  # the fact the refusal rests on: when torchao can, this fails and the refusal can go
        fully_shard(module.network.blocks[0], offload_policy=CPUOffloadPolicy(pin_memory=False))
    with pytest.raises(InputError, match="holds quantized weights .* which FSDP2 cannot shard.*resident, offloaded or streamed"):
        Sharded(quantized(mode), Runtime(CPU).ops)


def test_fp8_runs_fp8_matmuls_only_on_fp8_tensor_cores_in_bf16(monkeypatch: pytest.MonkeyPatch) -> None:
    cuda = torch.device("cuda")
    assert quantize.choose("fp8", CPU, torch.bfloat16) == quantize.Quantization("fp8", fp8_matmul=False)
    assert quantize.choose("int8", cuda, torch.bfloat16) == quantize.Quantization("int8")  # no GPU is asked about int8
    for capability, fp8 in (((8, 0), False), ((8, 9), True), ((9, 0), True)):
        monkeypatch.setattr(torch.cuda, "get_device_capability", lambda _device, c=capability: c)
        assert quantize.choose("fp8", cuda, torch.bfloat16).fp8_matmul is fp8
        assert quantize.choose("fp8", cuda, torch.float32).fp8_matmul is False  # torchao's per-row fp8 scaling takes bf16
    assert "dynamic fp8 activations" in quantize.Quantization("fp8", fp8_matmul=True).describe()
    assert quantize.Quantization("fp8").describe() == "fp8 weights (weight-only)"
