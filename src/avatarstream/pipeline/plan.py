"""What the chunk loop asks of a chunk plan; families supply plans (DESIGN.md §4, §9).

The loop knows no chunk kinds: it starts at ``first()``, goes on with
``next_after``, stops at ``is_past_end``, keeps the latents of chunks marked
``held`` (at most ``max_held`` of them) and publishes each chunk's pieces.
``ChunkPlan`` (N/I chunks with interpolated seams) and ``BlockPlan``
(back-to-back blocks of a block-causal model) are two plans; a family may
bring its own.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol

from avatarstream.pipeline.chunks import Chunk, ChunkKey


class Plan(Protocol):
    """A chunk schedule over the timeline, pure arithmetic on frame indices."""

    @property
    def max_held(self) -> int:
        """How many held chunks' latents the loop must keep at once (0: none; the family's stages keep their own state)."""
        ...

    def first(self) -> Chunk:
        """The chunk a run starts with; its stages condition on the reference, never on held latents."""
        ...

    def next_after(self, chunk: Chunk) -> Chunk:
        """The chunk executed after ``chunk`` (plans are open-ended: a live session has no known end)."""
        ...

    def is_past_end(self, chunk: Chunk, total_frames: int) -> bool:
        """True when ``chunk`` need not run for a timeline of ``total_frames`` frames; the loop stops there."""
        ...

    def chunk(self, key: ChunkKey) -> Chunk:
        """The chunk named ``key`` (its ``Chunk.key``): a resumed run rebuilds the next chunk and the held ones from their keys."""
        ...

    def steady_frames(self) -> tuple[int, int]:
        """Timeline frames ``[start, end)`` that one chunk in the steady state (after the first) adds: a chunk's length in time."""
        ...


def schedule(plan: Plan, total_frames: int | None = None) -> Iterator[Chunk]:
    """``plan``'s chunks in execution order, up to the first past ``total_frames`` (None: open-ended)."""
    chunk = plan.first()
    while total_frames is None or not plan.is_past_end(chunk, total_frames):
        yield chunk
        chunk = plan.next_after(chunk)
