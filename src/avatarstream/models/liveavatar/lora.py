"""LiveAvatar's LoRA: rank-r updates of the DiT's linear layers, merged into the weights or kept beside them.

A PEFT file holds ``<module>.lora_A.default.weight`` [r, in] and
``<module>.lora_B.default.weight`` [out, r] per adapted module (optionally
under ``base_model.model.``). Merged: ``W + (alpha / r) * B @ A``, as PEFT's
``merge_and_unload`` computes it. Unmerged: the layer adds ``(alpha / r) * B(A(x))``
to its output, which keeps the base weights intact (to switch the LoRA off, or
to quantize the base alone) at the cost of two thin matmuls per layer.
"""

from __future__ import annotations

import torch
from torch import nn

PREFIX = "base_model.model."
A_SUFFIX = ".lora_A.default.weight"
B_SUFFIX = ".lora_B.default.weight"


def lora_pairs(state: dict[str, torch.Tensor]) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    """Module name -> (A, B); raises ValueError naming what is unpaired or not a LoRA tensor."""
    a_mats: dict[str, torch.Tensor] = {}
    b_mats: dict[str, torch.Tensor] = {}
    for key, tensor in state.items():
        name = key.removeprefix(PREFIX)
        if name.endswith(A_SUFFIX):
            a_mats[name.removesuffix(A_SUFFIX)] = tensor
        elif name.endswith(B_SUFFIX):
            b_mats[name.removesuffix(B_SUFFIX)] = tensor
        else:
            raise ValueError(f"{key!r} is not a LoRA tensor (expected names ending in {A_SUFFIX} or {B_SUFFIX})")
    unpaired = sorted(set(a_mats) ^ set(b_mats))
    if unpaired:
        raise ValueError(f"LoRA modules without both A and B: {', '.join(unpaired[:3])}")
    return {name: (a_mats[name], b_mats[name]) for name in sorted(a_mats)}


def merged_weight(weight: torch.Tensor, a: torch.Tensor, b: torch.Tensor, alpha: float) -> torch.Tensor:
    """``W + (alpha / r) * B @ A`` in float32, returned in the weight's dtype."""
    rank = a.shape[0]
    return (weight.float() + (b.float() @ a.float()) * (alpha / rank)).to(weight.dtype)


class LoRALinear(nn.Module):
    """A linear layer plus its unmerged low-rank update."""

    def __init__(self, base: nn.Linear, a: torch.Tensor, b: torch.Tensor, alpha: float) -> None:
        super().__init__()
        self.base = base
        self.lora_A = nn.Parameter(a.to(base.weight.dtype), requires_grad=False)
        self.lora_B = nn.Parameter(b.to(base.weight.dtype), requires_grad=False)
        self.scale = alpha / a.shape[0]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.base(x) + (x @ self.lora_A.t() @ self.lora_B.t()) * self.scale


def apply_lora(network: nn.Module, pairs: dict[str, tuple[torch.Tensor, torch.Tensor]], alpha: float, *, merge: bool) -> None:
    """Merge each pair into (or wrap) the linear layer of that name; ValueError for a name or shape that does not fit."""
    for name, (a, b) in pairs.items():
        try:
            module = network.get_submodule(name)
        except AttributeError as exc:
            raise ValueError(f"the LoRA adapts {name!r}, which the DiT does not have") from exc
        if not isinstance(module, nn.Linear) or a.shape[1] != module.in_features or b.shape[0] != module.out_features or a.shape[0] != b.shape[1]:
            raise ValueError(f"the LoRA for {name!r} (A {tuple(a.shape)}, B {tuple(b.shape)}) does not fit that layer")
        if merge:
            module.weight.data = merged_weight(module.weight.data, a, b, alpha)
        else:
            parent, _, leaf = name.rpartition(".")
            setattr(network.get_submodule(parent) if parent else network, leaf, LoRALinear(module, a, b, alpha))
