"""Original (Wan) key names for weights held under diffusers' names, for writing checkpoints as downloaded.

diffusers converts original names to its own and not back; the inverse is
built here by running diffusers' converters over the original names listed
in ``original_keys.json`` (read off real-layout checkpoints) and checked to
be one-to-one.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import cache
from importlib import resources
from typing import Any

import torch
from diffusers.loaders.single_file_utils import convert_wan_transformer_to_diffusers, convert_wan_vae_to_diffusers

from avatarstream.weights.files import StateDict


@cache
def _names() -> dict[str, list[str]]:
    return json.loads((resources.files(__package__) / "original_keys.json").read_text())


def _inverse(original: list[str], convert: Callable[[StateDict], dict[str, Any]]) -> dict[str, str]:
    dummy = torch.empty(0)
    inverse: dict[str, str] = {}
    for name in original:
        (converted,) = convert({name: dummy}).keys()
        inverse[converted] = name
    if len(inverse) != len(original):
        raise RuntimeError("diffusers' converter maps two original names to one; original_keys.json is out of date")
    return inverse


def dit_to_original(state: StateDict, num_layers: int) -> StateDict:
    """A base DiT state dict under diffusers' names -> the original Wan names (adapter keys are not base keys)."""
    names = _names()
    original = names["dit"] + [f"blocks.{i}.{leaf}" for i in range(num_layers) for leaf in names["dit_block"]]
    inverse = _inverse(original, convert_wan_transformer_to_diffusers)
    return {inverse[k]: v for k, v in state.items()}


def vae_to_original(state: StateDict) -> StateDict:
    """An ``AutoencoderKLWan`` state dict -> the key names of ``Wan2.1_VAE.pth``."""
    inverse = _inverse(_names()["vae"], convert_wan_vae_to_diffusers)
    return {inverse[k]: v for k, v in state.items()}
