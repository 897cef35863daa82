"""The block plan of block-causal models: fixed blocks back to back, each published whole as soon as it exists.

A block-causal model (one rolling KV cache per denoising step, an attention
sink) carries what a block needs from the earlier ones in its own stage cache,
so the loop holds no latents and fills no conditioning positions: block k is
timeline frames ``[kB, (k+1)B)`` and nothing else.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from avatarstream.pipeline.chunks import Chunk, ChunkKey, Piece
from avatarstream.pipeline.plan import schedule

KIND = "B"


@dataclass(frozen=True)
class BlockPlan:
    """Blocks of ``block_frames`` timeline frames; implements ``pipeline.plan.Plan``."""

    block_frames: int

    def __post_init__(self) -> None:
        if self.block_frames < 1:
            raise ValueError(f"a block is 1 timeline frame or more, got {self.block_frames}")

    @property
    def max_held(self) -> int:
        return 0

    def block(self, k: int) -> Chunk:
        """Block k: generated, contributed and published at ``[kB, (k+1)B)``."""
        if k < 0:
            raise ValueError(f"block indices start at 0, got {k}")
        start, end = k * self.block_frames, (k + 1) * self.block_frames
        return Chunk(KIND, k, start, self.block_frames, (), (start, end), (Piece((KIND, k), 0, start, end),), held=False)

    def first(self) -> Chunk:
        return self.block(0)

    def next_after(self, chunk: Chunk) -> Chunk:
        return self.block(chunk.index + 1)

    def is_past_end(self, chunk: Chunk, total_frames: int) -> bool:
        """True when the block starts at or after the last frame (a block reaching past it runs, and is trimmed on output)."""
        return chunk.window_start >= total_frames

    def chunk(self, key: ChunkKey) -> Chunk:
        kind, index = key
        if kind != KIND:
            raise ValueError(f"this plan has only blocks ({KIND!r}), not {kind!r}")
        return self.block(index)

    def steady_frames(self) -> tuple[int, int]:
        second = self.block(1)
        return second.window_start, second.window_end

    def schedule(self, total_frames: int | None = None) -> Iterator[Chunk]:
        """Blocks in order; open-ended with ``total_frames=None``."""
        return schedule(self, total_frames)

    def num_chunks(self, total_frames: int) -> int:
        """Blocks a timeline of ``total_frames`` frames needs."""
        return -(-max(total_frames, 0) // self.block_frames)
