"""``--quantize`` and ``--quantize-modules``: the two load options a family declares to offer int8 and fp8 weights.

Quantizing is a load option, like ``--dtype``: it changes the weights a process
holds, once, for every pipeline built from them (a server's sessions share
them), and it happens before any residency policy packs or moves them, so
offloaded and streamed weights move in their quantized bytes. Which modules is
the family's to say (its DiTs and text encoder by default); the user may name
others. This module stays light: the CLI reads the options before torch loads.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from avatarstream.errors import InputError
from avatarstream.families.options import option

if TYPE_CHECKING:
    import torch

    from avatarstream.runtime.module import Module
    from avatarstream.runtime.quantize import Quantization

#: The modes ``runtime/quantize.py`` applies (a test holds the two lists equal).
QUANTIZE_MODES = ("int8", "fp8")
#: Between where a family's weights came from and how they are held, in its ``weights`` line (reports show it).
QUANTIZED_MARK = "; quantized: "


def quantize_option() -> Any:
    """The ``quantize`` field of a family's options."""
    return option(
        help="hold the quantized modules' linear layers in fewer bytes (torchao, at load): int8 (weight-only) or fp8 (e4m3 weights; "
        "fp8 matmuls on GPUs of compute capability 8.9 or later in bf16, weight-only elsewhere, the CPU included). Default: the "
        "weights' own precision. Quality: docs/quantization.md",
        choices=QUANTIZE_MODES,
        scope="load",
    )


def quantize_modules_option(defaults: Sequence[str]) -> Any:
    """The ``quantize_modules`` field, naming the family's default modules in its help."""
    return option(help=f"the modules quantize applies to, comma-separated ({','.join(defaults)})", scope="load", metavar="NAME,...")


def module_names(text: str | None, defaults: Sequence[str]) -> list[str]:
    """The names ``--quantize-modules`` gives, unchecked (the family's defaults when None)."""
    return list(defaults) if text is None else [name.strip() for name in text.split(",") if name.strip()]


def chosen_modules(text: str | None, defaults: Sequence[str], modules: Mapping[str, Module]) -> list[str]:
    """The module names ``--quantize-modules`` gives (the family's defaults when None), each one the model has."""
    names = module_names(text, defaults)
    if not names:
        raise InputError("--quantize-modules names no module; give one or more of: " + ", ".join(modules))
    unknown = [name for name in names if name not in modules]
    if unknown:
        raise InputError(f"--quantize-modules names {', '.join(unknown)}, which this model does not have; its modules are: {', '.join(modules)}")
    return names


def quantize_loaded(
    modules: Mapping[str, Module],
    mode: str | None,
    names: str | None,
    defaults: Sequence[str],
    device: torch.device,
    *,
    came_quantized: Mapping[str, Quantization] | None = None,
) -> str | None:
    """Quantize the chosen modules of a loaded family for ``device``; returns what was done, for the family's weights line
    (None when nothing is quantized: torchao is then not imported). ``came_quantized``: modules read quantized from a
    publisher's file, never quantized again (named in ``names`` for another mode: refused)."""
    came_quantized = came_quantized or {}
    if mode is None:
        if names is not None:
            raise InputError("--quantize-modules needs --quantize int8 or fp8")
        if not came_quantized:
            return None
    from avatarstream.runtime.quantize import quantize_network, summary

    done = {f"{name} (as published)": quantization for name, quantization in came_quantized.items()}
    if mode is not None:
        chosen = chosen_modules(names, defaults, modules)
        other = [name for name in chosen if names is not None and name in came_quantized and came_quantized[name].mode != mode]
        if other:
            raise InputError(
                f"{other[0]} comes {came_quantized[other[0]].mode} from the publisher's file, so --quantize {mode} cannot apply to it; "
                "leave it out of --quantize-modules"
            )
        done.update({name: quantize_network(modules[name].network, mode, device, name) for name in chosen if name not in came_quantized})
    return summary(done)
