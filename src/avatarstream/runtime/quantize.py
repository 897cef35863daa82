"""Weights in fewer bytes: torchao's int8 and fp8 configs applied to a loaded network's linear layers.

The network is read from the files users download, in its precision, and then
quantized in place: every ``nn.Linear`` weight becomes a torchao tensor that
holds int8 or float8 (e4m3) values and one scale per output row, and computes
with them (no kernel of ours). Norms, biases, embeddings and convolutions keep
their precision. What the modes mean where the network runs:

- ``int8``: int8 weights, activations in the network's precision (torchao's
  ``Int8WeightOnlyConfig``), on any device;
- ``fp8``: e4m3 weights; on a GPU with fp8 tensor cores (compute capability
  8.9 or later) in bf16, the activations are quantized to fp8 per row at each
  call and the matmul runs in fp8 (``Float8DynamicActivationFloat8WeightConfig``);
  elsewhere (older GPUs, fp32 weights, the CPU) weight-only
  (``Float8WeightOnlyConfig``). The bytes held are the same either way.

torchao is imported only here, when a network is quantized.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from avatarstream.errors import InputError
from avatarstream.runtime.packing import held_bytes

if TYPE_CHECKING:
    from torchao.core.config import AOBaseConfig

MODES = ("int8", "fp8")
#: The first CUDA compute capability with fp8 tensor cores (Ada, Hopper).
FP8_MATMUL_CAPABILITY = (8, 9)


@dataclass(frozen=True)
class Quantization:
    """One mode as it runs on one device: which torchao config, and what the report says of it."""

    mode: str
    fp8_matmul: bool = False  # fp8 activations too (dynamic, per row), where the GPU has fp8 tensor cores

    def describe(self) -> str:
        if self.mode == "int8":
            return "int8 weights (weight-only)"
        return "fp8 weights and dynamic fp8 activations" if self.fp8_matmul else "fp8 weights (weight-only)"

    def config(self) -> AOBaseConfig:
        from torchao.quantization import Float8DynamicActivationFloat8WeightConfig, Float8WeightOnlyConfig, Int8WeightOnlyConfig, PerRow

        if self.mode == "int8":
            return Int8WeightOnlyConfig()
        return Float8DynamicActivationFloat8WeightConfig(granularity=PerRow()) if self.fp8_matmul else Float8WeightOnlyConfig()


def has_fp8_matmul(device: torch.device) -> bool:
    """Whether ``device`` is a GPU with fp8 tensor cores."""
    return device.type == "cuda" and torch.cuda.get_device_capability(device) >= FP8_MATMUL_CAPABILITY


def choose(mode: str, device: torch.device, dtype: torch.dtype) -> Quantization:
    """``mode`` for weights of ``dtype`` that will run on ``device``: fp8 matmuls only on fp8 tensor cores, for bf16 weights
    (torchao's per-row fp8 scaling takes bf16)."""
    if mode not in MODES:
        raise InputError(f"unknown quantization {mode!r}; choose one of {', '.join(MODES)}")
    return Quantization(mode, fp8_matmul=mode == "fp8" and dtype == torch.bfloat16 and has_fp8_matmul(device))


def linear_layers(network: nn.Module) -> list[nn.Linear]:
    """The layers a mode quantizes: every ``nn.Linear`` whose weight is still plain."""
    return [m for m in network.modules() if isinstance(m, nn.Linear) and not is_quantized(m.weight)]


def quantize_network(network: nn.Module, mode: str, device: torch.device, name: str) -> Quantization:
    """Quantize ``network``'s linear layers in place for ``device``; returns how. A network without any is refused in one line."""
    layers = linear_layers(network)
    if not layers:
        raise InputError(f"module {name!r} has no linear layers to quantize (or they are quantized already); leave it out of the modules to quantize")
    quantization = choose(mode, device, layers[0].weight.dtype)
    _apply(network, quantization)
    return quantization


def _apply(network: nn.Module, quantization: Quantization) -> None:
    from torchao.quantization import quantize_

    quantize_(network, quantization.config())


def linear_weights(
    network: nn.Module,
    weights: Mapping[str, tuple[torch.Tensor, torch.Tensor]],
    mode: str,
    device: torch.device,
    precision: Callable[[str], torch.dtype],
    source: Path,
) -> dict[str, torch.Tensor]:
    """torchao weights for ``network``'s linear layers from the values and scales a publisher's file holds, keyed by
    parameter name; each layer computes in its ``precision`` on ``device``. A name that is not a linear layer's weight is
    a file of another model."""
    made: dict[str, torch.Tensor] = {}
    for key, (values, scale) in weights.items():
        try:
            module = network.get_submodule(key.removesuffix(".weight")) if key.endswith(".weight") else None
        except AttributeError:
            module = None
        if not isinstance(module, nn.Linear):
            raise InputError(f"{source} quantizes {key}, which is no linear layer's weight in this network; the file belongs to another model")
        dtype = precision(key)
        made[key] = from_values(values, scale, choose(mode, device, dtype), dtype)
    return made


def from_values(values: torch.Tensor, scale: torch.Tensor, quantization: Quantization, dtype: torch.dtype) -> torch.Tensor:
    """The torchao weight that ``quantization`` makes of a linear layer computing in ``dtype``, holding ``values`` (int8 or
    e4m3, one row per output) and ``scale`` (float32, one per row) as they are: a publisher's quantized weights, loaded
    without a round trip through full precision. torchao's own config builds a small weight first, so the settings it
    chooses (fp8 matmuls or weight-only) are the ones quantizing a full-precision layer would have given."""
    template: Any = _template(quantization, dtype)  # a torchao tensor subclass: flattens to its inner tensors and settings
    names, attributes = template.__tensor_flatten__()
    inner = {"qdata": values, "scale": scale}
    if "zero_point" in names:  # int8: symmetric, so zero
        inner["zero_point"] = torch.zeros_like(scale, dtype=torch.int8)
    rows, columns = values.shape
    weight: torch.Tensor = type(template).__tensor_unflatten__(inner, {**attributes, "block_size": [1, columns]}, torch.Size((rows, columns)), (columns, 1))
    return weight


def _template(quantization: Quantization, dtype: torch.dtype) -> torch.Tensor:
    """A weight quantized by ``quantization``'s torchao config (32x32: fp8 matmuls need sides in multiples of 16)."""
    layer = nn.Linear(32, 32, bias=False, dtype=dtype)
    _apply(layer, quantization)
    return layer.weight


def is_quantized(t: torch.Tensor) -> bool:
    """Whether ``t`` is a quantized weight (a torchao tensor subclass)."""
    from torch.utils._python_dispatch import is_traceable_wrapper_subclass

    return bool(is_traceable_wrapper_subclass(t))


def parameter_bytes(network: nn.Module) -> int:
    """Bytes of ``network``'s parameters as held: a quantized weight counts its data and scales."""
    return sum(held_bytes(p) for p in network.parameters())


def quantized_bytes(network: nn.Module, mode: str | None, dtype: torch.dtype) -> int:
    """Bytes of the parameters of ``network`` (built on the meta device; changed in place) in ``dtype``, its linear layers
    quantized by ``mode`` (None: not quantized) as torchao lays them out. The memory models count with this."""
    network.to(dtype)
    if mode is not None:
        _apply(network, Quantization(mode))  # fp8 with fp8 matmuls holds the same bytes as weight-only fp8
    return parameter_bytes(network)


def summary(quantized: dict[str, Quantization]) -> str:
    """``int8 weights (weight-only): dit, text_encoder``-style text for a report's weights line."""
    by_kind: dict[str, list[str]] = {}
    for module, quantization in quantized.items():
        by_kind.setdefault(quantization.describe(), []).append(module)
    return "; ".join(f"{kind}: {', '.join(modules)}" for kind, modules in by_kind.items())
