"""A module's size is what its weights hold: after int8 quantization, the int8 data and the scales (reports, the residency
policies' device accounting and the GPU scripts' weight bytes read it)."""

from __future__ import annotations

import torch
from torch import nn

from avatarstream.runtime.module import Module
from avatarstream.runtime.quantize import parameter_bytes, quantize_network


def test_a_quantized_module_counts_its_held_bytes_not_its_logical_size() -> None:
    network = nn.Sequential(nn.Linear(256, 256), nn.LayerNorm(256), nn.Linear(256, 128))
    module = Module("net", network)
    full = module.size_bytes
    assert full == sum(p.numel() * 4 for p in network.parameters())
    quantize_network(network, "int8", torch.device("cpu"), "net")
    assert module.size_bytes == parameter_bytes(network)
    assert module.size_bytes < full / 3  # int8 weights and a few scales, against float32
