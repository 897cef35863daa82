"""Read a checkpoint that optimum-quanto saved (a publisher's pre-quantized download) without quanto and without running it.

quanto saves a frozen quantized linear layer ``NAME`` as ``NAME.weight._data``
(int8 or float8 e4m3 values, one row per output feature) and
``NAME.weight._scale`` (one scale per row: weight = data x scale), beside
``NAME.bias`` and two activation scales (``NAME.input_scale``,
``NAME.output_scale``: unused when activations are not quantized). A JSON map
saved beside the weights names every quantized module with its weight and
activation types. This reader splits such a file into the plain tensors and
the quantized layers' values and scales, checked; the runtime turns the latter
into torchao weights as they are (``runtime/quantize.py``), so nothing is
dequantized and quantized again.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import torch

from avatarstream.errors import InputError
from avatarstream.weights.config_values import read_json_object
from avatarstream.weights.files import StateDict, read_safetensors, safetensors_shapes
from avatarstream.weights.sandbox import inside

#: quanto's weight types avatarstream reads, as the quantization modes they are.
MODES = {"qint8": "int8", "qfloat8": "fp8", "qfloat8_e4m3fn": "fp8"}
#: The element type each mode's values must have.
VALUE_DTYPES = {"int8": torch.int8, "fp8": torch.float8_e4m3fn}
DATA, SCALE = ".weight._data", ".weight._scale"
#: Tensors quanto keeps beside a quantized layer for activation quantization (unused for weight-only layers).
ACTIVATION_SCALES = (".input_scale", ".output_scale")
#: The largest quantization map read (one short entry per layer: 40 blocks of a 14B DiT take about 30 kB).
MAX_MAP_BYTES = 16 << 20


class QuantizedWeight(NamedTuple):
    """One linear layer's weight as the file holds it: values and one float32 scale per output row (a pair, as the
    runtime's ``linear_weights`` takes it)."""

    values: torch.Tensor
    scale: torch.Tensor


@dataclass
class QuantoCheckpoint:
    """A quanto-saved state dict split in two: tensors to load as they are, and quantized weights keyed by parameter name."""

    source: Path
    mode: str
    plain: StateDict
    quantized: dict[str, QuantizedWeight]

    @classmethod
    def read(cls, path: Path, map_path: Path) -> QuantoCheckpoint:
        """``path`` (safetensors) with its quantization map ``map_path``; all its quantized layers share one mode."""
        mode, modules = read_quantization_map(map_path)
        state = read_safetensors(path)
        quantized: dict[str, QuantizedWeight] = {}
        for module in modules:
            quantized[module + ".weight"] = _take_weight(state, module, mode, path)
            for suffix in ACTIVATION_SCALES:
                state.pop(module + suffix, None)
        stray = sorted(k for k in state if k.endswith((DATA, SCALE)))
        if stray:
            raise InputError(f"{path} holds quantized values its map {map_path} does not name ({', '.join(stray[:3])}); the map belongs to another file")
        return cls(path, mode, state, quantized)

    def renamed(self, rename: Callable[[str], str]) -> QuantoCheckpoint:
        """The same tensors under the network's names (``rename`` maps one state-dict key)."""
        return QuantoCheckpoint(self.source, self.mode, {rename(k): v for k, v in self.plain.items()}, {rename(k): v for k, v in self.quantized.items()})


def map_beside(path: Path) -> Path:
    """Where quanto's users keep the map of ``path``: the same name with ``.json`` for ``.safetensors``."""
    return inside(path.parent, path.with_suffix(".json"))


@dataclass(frozen=True)
class QuantoHeader:
    """A quanto file's sizes from its header alone: what a loader checks before reading gigabytes."""

    source: Path

    def shapes(self) -> dict[str, tuple[int, ...]]:
        """Every tensor's shape, each quantized weight under its plain name (``NAME.weight``)."""
        found = safetensors_shapes(self.source)
        return {(k[: -len(DATA)] + ".weight" if k.endswith(DATA) else k): v for k, v in found.items() if not k.endswith(SCALE)}


def read_quantization_map(path: Path) -> tuple[str, list[str]]:
    """The one mode and the quantized modules a quanto map names; activation quantization and other types are refused."""
    expected = "expected the quantization map optimum-quanto saved beside the weights ({module: {weights, activations}})"
    if not path.is_file():
        raise InputError(f"quantization map {path} not found; {expected}")
    if path.stat().st_size > MAX_MAP_BYTES:
        raise InputError(f"{path} is {path.stat().st_size} bytes, more than the {MAX_MAP_BYTES >> 20} MiB a quantization map may be; {expected}")
    raw = read_json_object(path, expected)
    modes: set[str] = set()
    modules: list[str] = []
    for module, entry in raw.items():
        if not isinstance(entry, dict) or not isinstance(entry.get("weights"), str) or not isinstance(entry.get("activations"), str):
            raise InputError(f"{path}: the entry of {module!r} is not {{weights, activations}}; {expected}")
        if entry["activations"] != "none":
            raise InputError(
                f"{path} quantizes the activations of {module!r} ({entry['activations']}) with static scales, which avatarstream does not "
                "read; use a weight-only checkpoint (the publisher's fp8 and int8 files are)"
            )
        if entry["weights"] == "none":
            continue
        if entry["weights"] not in MODES:
            raise InputError(f"{path} quantizes {module!r} to {entry['weights']}; avatarstream reads {', '.join(MODES)} weights")
        modes.add(MODES[entry["weights"]])
        modules.append(module)
    if not modules:
        raise InputError(f"{path} names no quantized module; {expected}")
    if len(modes) > 1:
        raise InputError(f"{path} mixes {' and '.join(sorted(modes))} layers; avatarstream reads one mode per file")
    return modes.pop(), modules


def _take_weight(state: StateDict, module: str, mode: str, path: Path) -> QuantizedWeight:
    """Pop one layer's values and scale from ``state``, each checked against the other and the mode."""
    values, scale = state.pop(module + DATA, None), state.pop(module + SCALE, None)
    if values is None or scale is None:
        raise InputError(f"{path} lacks {module}{DATA if values is None else SCALE}, which its map quantizes; the download is incomplete")
    if values.dtype != VALUE_DTYPES[mode] or values.dim() != 2:
        raise InputError(f"{path} holds {module}{DATA} as a {values.dim()}-d {values.dtype} tensor; its map says {mode} values of a linear layer (2-d)")
    rows = values.shape[0]
    if not scale.is_floating_point() or scale.numel() != rows or scale.dim() not in (1, 2):
        raise InputError(f"{path} holds {module}{SCALE} of shape {tuple(scale.shape)} ({scale.dtype}); expected one float scale per row ({rows})")
    scale = scale.to(torch.float32).reshape(rows, 1)
    if not torch.isfinite(scale).all():
        raise InputError(f"{path} holds non-finite scales in {module}{SCALE}; the file is damaged")
    return QuantizedWeight(values, scale)
