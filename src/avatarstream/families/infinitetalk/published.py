"""The publisher's quantized InfiniteTalk files: which of them a run reads, and how they are reported.

MeiGen-AI's ``quant_models/`` folder holds the DiT quantized by optimum-quanto
(``infinitetalk_single_fp8.safetensors``, ``..._int8``) and UMT5 in fp8
(``t5_fp8.safetensors`` with ``t5_map_fp8.json``). As the reference CLI does
with ``--quant MODE --quant_dir DIT_FILE``, the text encoder is read from the
file of the ``--quantize`` mode beside the DiT's when there is one (and
``--quantize`` applies to it); otherwise torchao quantizes the full-precision one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import torch

from avatarstream.errors import InputError
from avatarstream.families.infinitetalk.options import QUANTIZED_BY_DEFAULT
from avatarstream.families.quantization import module_names
from avatarstream.runtime.quantize import Quantization, choose
from avatarstream.weights.quanto import map_beside, read_quantization_map
from avatarstream.weights.sandbox import inside


@dataclass(frozen=True)
class Published:
    """The publisher's quantized files read instead of the full-precision ones (the text encoder's where it ships one),
    and the device they will run on (their fp8 layers compute as fits it)."""

    dit: Path
    text_encoder: Path | None
    device: torch.device


def published_files(
    dit: Path, quantize: str | None, quantize_modules: str | None, device: torch.device, defaults: Sequence[str] = QUANTIZED_BY_DEFAULT
) -> Published:
    """``dit``, and the text encoder's file of the ``quantize`` mode beside it when ``quantize`` applies to the text encoder."""
    if not dit.is_file():
        raise InputError(f"quantized DiT {dit} not found; expected the publisher's InfiniteTalk/quant_models/infinitetalk_single_fp8.safetensors (or _int8)")
    text_encoder = dit.parent / f"t5_{quantize}.safetensors"
    wanted = quantize is not None and "text_encoder" in module_names(quantize_modules, defaults)
    return Published(dit, inside(dit.parent, text_encoder) if wanted and text_encoder.is_file() else None, device)


def text_encoder_map(path: Path) -> Path:
    """``t5_fp8.safetensors`` -> ``t5_map_fp8.json``, the publisher's name for its map."""
    return inside(path.parent, path.with_name(path.name.replace("t5_", "t5_map_", 1)).with_suffix(".json"))


def published_quantization(published: Published, dtype: torch.dtype) -> dict[str, Quantization]:
    """How each module read quantized computes on the run's device (its mode is its map's)."""
    maps = {"dit": map_beside(published.dit)}
    if published.text_encoder is not None:
        maps["text_encoder"] = text_encoder_map(published.text_encoder)
    return {name: choose(read_quantization_map(path)[0], published.device, dtype) for name, path in maps.items()}


def describe(published: Published) -> str:
    """The files for the family's weights line."""
    text = f"{published.dit} (the publisher's quantized DiT)"
    return text if published.text_encoder is None else f"{text}, {published.text_encoder} (its quantized UMT5)"
