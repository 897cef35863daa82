"""Module: one model and its checkpoint (DESIGN.md §3).

A Module builds its network from a factory, loads safetensors weights (never
pickle) and reports its size. Where its weights live is the runtime's business:
stages call ``network`` only between the runtime's acquire and release.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file

from avatarstream.errors import InputError, PipelineGraphError
from avatarstream.runtime.packing import held_bytes

N = TypeVar("N", bound=torch.nn.Module)


class Module:
    """A named ``torch.nn.Module`` with its weights and size. How its work splits across processes is not its business:
    a family declares that in its pipeline's spec (``runtime/parallel/strategy.py``)."""

    def __init__(self, name: str, network: torch.nn.Module) -> None:
        self.name = name
        self.network = network.eval().requires_grad_(False)

    @classmethod
    def build(cls, name: str, factory: Callable[[], torch.nn.Module], weights: Path | None = None, seed: int = 0) -> Module:
        """Build from ``factory``; random init from ``seed`` unless ``weights`` is given."""
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            network = factory()
        module = cls(name, network)
        if weights is not None:
            module.load_weights(weights)
        return module

    def network_as(self, kind: type[N]) -> N:
        """The network as the class a model-specific caller (a stage, a trainer) drives; a module holding another class is a wiring error."""
        if not isinstance(self.network, kind):
            raise PipelineGraphError(f"module {self.name!r} holds a {type(self.network).__name__} where a {kind.__name__} is needed")
        return self.network

    def load_weights(self, path: Path) -> None:
        """Load a safetensors file; every tensor must match the network exactly."""
        path = Path(path)
        if not path.is_file():
            raise InputError(f"weights for {self.name!r} not found: {path}")
        try:
            tensors = load_file(str(path))
        except (SafetensorError, OSError) as exc:
            raise InputError(f"cannot read weights {path}: {exc}; expected a .safetensors file") from exc
        expected = self.network.state_dict()
        missing = sorted(set(expected) - set(tensors))
        unexpected = sorted(set(tensors) - set(expected))
        wrong_shape = sorted(k for k in set(expected) & set(tensors) if expected[k].shape != tensors[k].shape)
        if missing or unexpected or wrong_shape:
            raise InputError(
                f"weights {path} do not fit module {self.name!r}: "
                f"missing {missing[:3]}, unexpected {unexpected[:3]}, wrong shape {wrong_shape[:3]}; "
                "were they saved from the same model config?"
            )
        integral = sorted(k for k, v in expected.items() if v.is_floating_point() and not tensors[k].is_floating_point())
        if integral:
            raise InputError(
                f"weights {path} hold {integral[0]} as {tensors[integral[0]].dtype} where module {self.name!r} expects a floating-point weight; the file is damaged or from another program"
            )
        self.network.load_state_dict(tensors, strict=True)

    def save_weights(self, path: Path) -> None:
        state = {k: v.detach().contiguous().cpu() for k, v in self.network.state_dict().items()}
        save_file(state, str(path))
        Path(path).chmod(0o644)  # safetensors writes through a private temp file; weights are meant to be shared

    @property
    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.network.parameters())

    @property
    def size_bytes(self) -> int:
        """Bytes its weights hold: a quantized weight counts its data and scales, not its logical size."""
        tensors = list(self.network.parameters()) + list(self.network.buffers())
        return sum(held_bytes(t) for t in tensors)

    def __repr__(self) -> str:
        return f"<Module {self.name!r} {self.num_parameters / 1e6:.2f}M params>"
