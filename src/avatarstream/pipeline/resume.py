"""A run's resumable state: everything the next chunk needs, small and of constant size (DESIGN.md §5).

Taken at a chunk boundary, and handed on once that boundary's frames were
handed on, it lets another process (another replica of a fleet) carry on the
same session with the same timeline: the init outputs (the reference
conditioning, so nothing is re-encoded), the held chunks' latents (motion /
anchor frames), what each stage says it needs of its cache
(``Stage.resume_state``: a causal decoder's cache, or nothing), where the
chunk schedule stands and the audio the next chunk still reads. Nothing in it
grows with the session.

It travels between processes of one cluster (Ray serializes it); it is never
written to disk or read from outside, so it is not a file format.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from avatarstream.pipeline.chunks import ChunkKey
from avatarstream.runtime.host_reads import host_read
from avatarstream.sources.audio_timeline import TimelineState

if TYPE_CHECKING:
    from avatarstream.pipeline.stage import Stage


@dataclass(frozen=True)
class Resumable:
    """A run between two chunks. ``next_chunk`` is the next chunk's key in the plan; ``next_publish`` the first timeline frame
    not yet published; ``published_frames`` the video frames handed on so far (where the resumed video continues)."""

    next_chunk: ChunkKey
    next_publish: int
    published_frames: int
    values: dict[str, Any]  # the init stages' outputs, on the host
    held: dict[ChunkKey, torch.Tensor]  # the held chunks' latents, oldest first
    caches: dict[str, Any]  # stage name -> what its resume_state returned (stages that returned None are absent)
    audio: TimelineState
    seed: int

    @property
    def nbytes(self) -> int:
        """What the state weighs (tensors and arrays), for the metrics and the size check in the tests."""
        return nbytes_of(self.values) + nbytes_of(self.held) + nbytes_of(self.caches) + self.audio.nbytes


@dataclass(frozen=True)
class StageParts:
    """What some stages' ``resume_state`` returned at one point: on the host when a state is taken (else None), and its weight."""

    parts: dict[str, Any] | None
    nbytes: int


def stage_parts(stages: Iterable[Stage], caches: Mapping[str, Any], *, take: bool) -> StageParts:
    """Ask ``stages`` what they need of their caches; weigh it always (no copy), copy it to the host only when ``take``."""
    parts = {stage.name: part for stage in stages if (part := stage.resume_state(caches.get(stage.name))) is not None}
    return StageParts(to_host(parts) if take else None, nbytes_of(parts))


def to_host(value: Any) -> Any:
    """A copy whose tensors are on the CPU (a GPU tensor cannot travel to a CPU-only process); other leaves as they are.
    A declared host read: only runs that keep a resumable state make it."""
    with host_read("resumable_state"):
        return _map(value, lambda t: t.detach().to("cpu", copy=True))


def to_device(value: Any, device: torch.device) -> Any:
    """A copy on ``device``, even where the tensors already are: a stage may write its cache in place, and the state must
    stay as it was (it can be resumed more than once)."""
    return _map(value, lambda t: t.to(device, copy=True))


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


def nbytes_of(value: Any) -> int:
    """The bytes of the tensors and arrays in ``value`` (nested dicts, lists, tuples, dataclasses), read without copying."""
    if isinstance(value, torch.Tensor):
        return value.numel() * value.element_size()
    if isinstance(value, np.ndarray):
        return int(value.nbytes)
    if isinstance(value, dict):
        return sum(nbytes_of(v) for v in value.values())
    if isinstance(value, list | tuple):
        return sum(nbytes_of(v) for v in value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return sum(nbytes_of(getattr(value, f.name)) for f in dataclasses.fields(value))
    return 0
