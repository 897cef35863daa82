"""Model families: each assembles its modules and stages into a Pipeline.

A family is chosen by name (``--model``); the loop, chunk plan, memory
contract, runtime and publishing come from the framework. Both families offer
the interface of ``families.base.Family``.
"""

from __future__ import annotations

import os
from pathlib import Path

import torch

from avatarstream.errors import InputError
from avatarstream.families.base import Family
from avatarstream.families.demo import DemoFamily

VARIANTS: dict[str, tuple[str, str]] = {"demo": ("demo", "default"), "demo-tiny": ("demo", "tiny"), "infinitetalk": ("infinitetalk", "default")}
DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}


def resolve_dtype(name: str | None, device: torch.device) -> torch.dtype:
    """``--dtype``: bf16 on CUDA and fp32 on the CPU unless named."""
    if name is None:
        return torch.bfloat16 if device.type == "cuda" else torch.float32
    if name not in DTYPES:
        raise InputError(f"unknown --dtype {name!r}; choose one of: {', '.join(DTYPES)}")
    return DTYPES[name]


def load_family(
    model: str,
    weights_dir: str | os.PathLike[str] | None = None,
    *,
    seed: int = 0,
    dtype: str | None = None,
    device: torch.device | None = None,
    folders: dict[str, Path] | None = None,
) -> DemoFamily | Family:
    """Build the named model (``demo``, ``demo-tiny`` or ``infinitetalk``) with its modules loaded.

    ``folders`` names the infinitetalk download folders explicitly (``base``,
    ``adapter``, ``audio_encoder``) when they are not under ``weights_dir``.
    """
    if model not in VARIANTS:
        raise InputError(f"unknown model {model!r}; choose one of: {', '.join(VARIANTS)}")
    family, variant = VARIANTS[model]
    folders = {k: v for k, v in (folders or {}).items() if v is not None}
    if family == "demo":
        if dtype is not None or folders:
            raise InputError(f"the {model} model takes neither --dtype nor --base/--adapter/--audio-encoder; its weights are one folder (--weights)")
        return DemoFamily.load(variant, weights_dir, seed=seed)
    from avatarstream.families.infinitetalk.family import InfiniteTalkFamily

    root = Path(weights_dir) if weights_dir is not None else None
    return InfiniteTalkFamily.load(root, dtype=resolve_dtype(dtype, device or torch.device("cpu")), **folders)
