"""Tiny InfiniteTalk files written as MeiGen-AI publishes its quantized ones, by optimum-quanto itself.

The publisher's ``quant_models/infinitetalk_single_{fp8,int8}.safetensors`` holds the reference's whole DiT (the Wan
base and the adapter merged, in bf16, under the original names) quantized weight-only by quanto, its map beside it;
``t5_fp8.safetensors`` (map ``t5_map_fp8.json``) holds Wan's UMT5 encoder the same way. quanto quantizes modules, so a
state dict is first given a module tree named as its keys: a linear layer wherever a 2-d weight is that is not an
embedding's (as in the reference's networks), plain parameters elsewhere.
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


def skeleton(state: dict[str, torch.Tensor], embeddings: tuple[str, ...] = ()) -> nn.Module:
    """Modules named as ``state``'s keys, holding its tensors; keys containing one of ``embeddings`` are not linear layers."""
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
        if leaf == "weight" and tensor.dim() == 2 and not any(e in key for e in embeddings):
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


#: The 2-d weights of Wan's UMT5 that are embeddings.
T5_EMBEDDINGS = ("token_embedding", "pos_embedding")


def t5_state(pth: Path) -> dict[str, torch.Tensor]:
    """Wan's UMT5 state dict (``models_t5_umt5-xxl-enc-bf16.pth``) in bf16."""
    return {k: v.to(torch.bfloat16) for k, v in torch.load(pth, map_location="cpu", weights_only=True).items()}


def write_quanto_dit(base: Path, adapter: Path, out_dir: Path, mode: str) -> Path:
    """``out_dir/infinitetalk_single_{mode}.safetensors`` and its map (the same name, ``.json``); returns the file."""
    path = out_dir / f"infinitetalk_single_{mode}.safetensors"
    _write(skeleton(merged_dit(base, adapter)), mode, path, path.with_suffix(".json"))
    return path


def write_quanto_t5(pth: Path, out_dir: Path, mode: str) -> Path:
    """``out_dir/t5_{mode}.safetensors`` and its map ``t5_map_{mode}.json``; returns the file."""
    path = out_dir / f"t5_{mode}.safetensors"
    _write(skeleton(t5_state(pth), T5_EMBEDDINGS), mode, path, out_dir / f"t5_map_{mode}.json")
    return path


def _write(model: nn.Module, mode: str, path: Path, map_path: Path) -> None:
    quantize(model, weights=QTYPES[mode])
    freeze(model)
    path.parent.mkdir(parents=True, exist_ok=True)
    save_file({k: v.contiguous() for k, v in model.state_dict().items()}, str(path))
    map_path.write_text(json.dumps(quantization_map(model)))
