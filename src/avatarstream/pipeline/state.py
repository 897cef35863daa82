"""Per-session state with a bounded size (DESIGN.md §5).

``SessionState`` holds only what the next chunks need: init outputs (the
reference conditioning, computed once), the latents of the few chunks the
plan marks as held (at most ``plan.max_held``: those whose frames condition
later chunks or wait to be published), and per-stage caches of fixed size
(such as the VAE decoder's causal cache). Nothing here grows with the session
length.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import torch

from avatarstream.pipeline.chunks import Chunk, ChunkKey


@dataclass
class HeldLatents:
    """Latents of held chunks ([B, C, T, H, W], time on dim 2), by chunk key; the oldest go first past ``max_held``."""

    max_held: int = 2
    _chunks: dict[ChunkKey, tuple[Chunk, torch.Tensor]] = field(default_factory=dict)

    def put(self, chunk: Chunk, latents: torch.Tensor) -> None:
        self._chunks.pop(chunk.key, None)  # a chunk put again counts as the newest
        self._chunks[chunk.key] = (chunk, latents)
        while len(self._chunks) > self.max_held:
            del self._chunks[next(iter(self._chunks))]

    def frames(self, timeline_frames: tuple[int, ...]) -> torch.Tensor:
        """Gather generated (not conditioning) frames by timeline index from the held chunks."""
        picked = [self._frame(f) for f in timeline_frames]
        return torch.cat(picked, dim=2)

    def _frame(self, frame: int) -> torch.Tensor:
        for chunk, latents in self._chunks.values():
            pos = frame - chunk.window_start
            if 0 <= pos < chunk.window_frames and pos not in chunk.cond_positions:
                return latents[:, :, pos : pos + 1]
        raise KeyError(f"timeline frame {frame} is not held by any chunk")

    def latents_of(self, source: ChunkKey) -> torch.Tensor:
        if source not in self._chunks:
            raise KeyError(f"chunk {source[0]}{source[1]} is not held")
        return self._chunks[source][1]

    def __len__(self) -> int:
        return len(self._chunks)

    def by_key(self) -> dict[ChunkKey, torch.Tensor]:
        """The held latents by chunk key, oldest first (what a resumable state keeps)."""
        return {key: latents for key, (_, latents) in self._chunks.items()}

    def nbytes(self) -> int:
        return sum(latents.numel() * latents.element_size() for _, latents in self._chunks.values())


@dataclass
class SessionState:
    """Everything one session keeps between chunks."""

    seed: int
    values: dict[str, Any] = field(default_factory=dict)
    held: HeldLatents = field(default_factory=HeldLatents)
    caches: dict[str, Any] = field(default_factory=dict)


class StageContext(Mapping[str, Any]):
    """What one stage run sees: this step's values layered over the session's init values."""

    def __init__(self, session: SessionState, stage_name: str, step_values: dict[str, Any]) -> None:
        self.session = session
        self._stage_name = stage_name
        self._step = step_values

    def __getitem__(self, key: str) -> Any:
        if key in self._step:
            return self._step[key]
        return self.session.values[key]

    def __iter__(self) -> Iterator[str]:
        return iter({**self.session.values, **self._step})

    def __len__(self) -> int:
        return len(set(self.session.values) | set(self._step))

    def __setitem__(self, key: str, value: Any) -> None:
        self._step[key] = value

    @property
    def cache(self) -> Any:
        """This stage's bounded per-session cache (None until the stage sets one)."""
        return self.session.caches.get(self._stage_name)

    @cache.setter
    def cache(self, value: Any) -> None:
        self.session.caches[self._stage_name] = value

    @property
    def seed(self) -> int:
        return self.session.seed
