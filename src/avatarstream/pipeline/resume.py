"""A run's resumable state: everything the next chunk needs, small and of constant size (DESIGN.md §5).

Taken at a chunk boundary, after that chunk's frames were handed on, it lets
another process (another replica of a fleet) carry on the same session with
the same timeline: the init outputs (the reference conditioning, so nothing is
re-encoded), the held N-chunk latents (motion / anchor frames), the stages'
fixed-size caches (the causal decoder's), where the chunk schedule stands and
the audio the next chunk still reads. Nothing in it grows with the session.

It travels between processes of one cluster (Ray serializes it); it is never
written to disk or read from outside, so it is not a file format.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from avatarstream.sources.audio_timeline import TimelineState


@dataclass(frozen=True)
class Resumable:
    """A run between two chunks. ``next_chunk`` is (kind, index) in the plan; ``next_publish`` the first timeline frame not yet
    published; ``published_frames`` the video frames handed on so far (where the resumed video continues)."""

    next_chunk: tuple[str, int]
    next_publish: int
    published_frames: int
    values: dict[str, Any]  # the init stages' outputs, on the host
    held: dict[int, torch.Tensor]  # N-chunk index -> its latents
    caches: dict[str, Any]
    audio: TimelineState
    seed: int

    @property
    def nbytes(self) -> int:
        """What the state weighs (tensors and arrays), for the metrics and the size check in the tests."""
        return _nbytes(self.values) + _nbytes(self.held) + _nbytes(self.caches) + self.audio.nbytes


def to_host(value: Any) -> Any:
    """A copy whose tensors are on the CPU (a GPU tensor cannot travel to a CPU-only process); other leaves as they are."""
    return _map(value, lambda t: t.detach().to("cpu", copy=True))


def to_device(value: Any, device: torch.device) -> Any:
    return _map(value, lambda t: t.to(device))


def _map(value: Any, fn: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return fn(value)
    if isinstance(value, dict):
        return {k: _map(v, fn) for k, v in value.items()}
    if isinstance(value, list | tuple):
        mapped = [_map(v, fn) for v in value]
        return mapped if isinstance(value, list) else type(value)(mapped)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.replace(value, **{f.name: _map(getattr(value, f.name), fn) for f in dataclasses.fields(value) if f.init})
    return value


def _nbytes(value: Any) -> int:
    if isinstance(value, torch.Tensor):
        return value.numel() * value.element_size()
    if isinstance(value, np.ndarray):
        return int(value.nbytes)
    if isinstance(value, dict):
        return sum(_nbytes(v) for v in value.values())
    if isinstance(value, list | tuple):
        return sum(_nbytes(v) for v in value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return sum(_nbytes(getattr(value, f.name)) for f in dataclasses.fields(value))
    return 0
