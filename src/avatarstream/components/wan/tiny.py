"""Writers for the parts of a random tiny checkpoint that every Wan-based family lays out alike.

A family's own ``tiny.py`` writes its DiT and its folders with these: sharded
safetensors named as the Wan and Diffusers downloads name them, the Wan 2.1
VAE in either layout, and a wav2vec2 folder as Hugging Face ships one. The
same seed gives the same networks in both layouts.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import torch
from safetensors.torch import save_file
from transformers import PreTrainedModel

from avatarstream.components.wan.config import VAEConfig
from avatarstream.components.wan.layout import VAE_FILE, Layout
from avatarstream.components.wan.load_wav2vec2 import WEIGHT_NORM
from avatarstream.components.wan.original_names import vae_to_original
from avatarstream.components.wan.vae import build_vae
from avatarstream.weights.files import StateDict

T = TypeVar("T")


def seeded(seed: int, build: Callable[[], T]) -> T:
    """``build()`` under ``seed``, leaving the global random state as it was."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return build()


def contiguous(state: StateDict) -> StateDict:
    """Detached, contiguous tensors, as safetensors and ``torch.save`` want them."""
    return {k: v.detach().contiguous() for k, v in state.items()}


def write_sharded(folder: Path, stem: str, state: StateDict, shards: int) -> None:
    """``stem-0000i-of-0000n.safetensors`` files and their index, named as both the Wan and the Diffusers downloads name them."""
    keys = sorted(state)
    per = -(-len(keys) // shards)
    weight_map: dict[str, str] = {}
    for i in range(shards):
        name = f"{stem}-{i + 1:05d}-of-{shards:05d}.safetensors"
        part = {k: state[k] for k in keys[i * per : (i + 1) * per]}
        save_file(part, str(folder / name))
        weight_map.update(dict.fromkeys(part, name))
    total = sum(t.numel() * t.element_size() for t in state.values())
    index = {"metadata": {"total_size": total}, "weight_map": weight_map}
    (folder / f"{stem}.safetensors.index.json").write_text(json.dumps(index, indent=2))


def write_vae(base: Path, layout: Layout, config: VAEConfig, seed: int) -> None:
    vae = seeded(seed, lambda: build_vae(config))
    if layout == "original":
        torch.save(vae_to_original(contiguous(vae.state_dict())), base / VAE_FILE)
    else:
        vae.save_pretrained(base / "vae", safe_serialization=True)


def save_wav2vec2(folder: Path, network: PreTrainedModel, preprocessor: dict[str, Any]) -> None:
    """``network``'s weights as Hugging Face ships wav2vec2 (weight norm as ``weight_g``/``weight_v``), its config and processor settings."""
    renamed = {v: k for k, v in WEIGHT_NORM.items()}
    state = {}
    for key, tensor in contiguous(network.state_dict()).items():
        stem, _, leaf = key.rpartition(".parametrizations.weight.")
        state[f"{stem}.{renamed[leaf]}" if leaf in renamed else key] = tensor
    folder.mkdir(parents=True, exist_ok=True)
    save_file(state, str(folder / "model.safetensors"))
    network.config.to_json_file(str(folder / "config.json"))
    (folder / "preprocessor_config.json").write_text(json.dumps(preprocessor, indent=2))
