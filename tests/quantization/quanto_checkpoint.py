"""A tiny InfiniteTalk DiT written as MeiGen-AI publishes its quantized ones, by optimum-quanto itself.

The publisher's ``quant_models/infinitetalk_single_{fp8,int8}.safetensors`` holds the reference's whole DiT (the Wan
base and the adapter merged, in bf16, under the original names) quantized weight-only by quanto, its map beside it.
quanto quantizes modules, so the state dict is first given a module tree named as its keys: a linear layer wherever
a 2-d weight is (as in the reference's WanModel, where every 2-d weight is a linear layer's), plain parameters elsewhere.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
from optimum.quanto import freeze, qfloat8, qint8, quantization_map, quantize
from safetensors.torch import load_file, save_file
from torch import nn

QTYPES = {"fp8": qfloat8, "int8": qint8}


def merged_dit(base: Path, adapter: Path) -> dict[str, torch.Tensor]:
    """The base shards and the adapter in one state dict, in bf16 (as the publisher's file was made)."""
    state: dict[str, torch.Tensor] = {}
    for shard in sorted(base.glob("diffusion_pytorch_model*.safetensors")):
        state.update(load_file(shard))
    state.update(load_file(adapter))
    return {k: v.to(torch.bfloat16) for k, v in state.items()}


def skeleton(state: dict[str, torch.Tensor]) -> nn.Module:
    """Modules named as ``state``'s keys, holding its tensors."""
    root = nn.Module()

    def module_at(path: str) -> nn.Module:
        module = root
        for part in path.split(".") if path else []:
            if not hasattr(module, part):
                module.add_module(part, nn.Module())
            module = getattr(module, part)
        return module

    for key, tensor in state.items():
        path, _, leaf = key.rpartition(".")
        if leaf == "weight" and tensor.dim() == 2:
            parent, _, name = path.rpartition(".")
            rows, columns = tensor.shape
            module_at(parent).add_module(name, nn.Linear(columns, rows, bias=f"{path}.bias" in state, dtype=tensor.dtype))
    for key, tensor in state.items():
        path, _, leaf = key.rpartition(".")
        holder = module_at(path)
        if not isinstance(holder, nn.Linear):
            holder.register_parameter(leaf, nn.Parameter(tensor.clone(), requires_grad=False))
    root.load_state_dict(state)
    return root


def write_quanto_dit(base: Path, adapter: Path, out_dir: Path, mode: str) -> Path:
    """``out_dir/infinitetalk_single_{mode}.safetensors`` and its map; returns the file."""
    model = skeleton(merged_dit(base, adapter))
    quantize(model, weights=QTYPES[mode])
    freeze(model)
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"infinitetalk_single_{mode}.safetensors"
    save_file({k: v.contiguous() for k, v in model.state_dict().items()}, str(path))
    path.with_suffix(".json").write_text(json.dumps(quantization_map(model)))
    return path
