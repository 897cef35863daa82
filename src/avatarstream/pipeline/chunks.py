"""Chunks on the timeline and the timeline-to-video frame layout (DESIGN.md §4).

A ``Chunk`` is one model call and the pieces of output it makes final; which
chunks run, in which order, is a plan's business (``pipeline.plan.Plan``; the
families bring their plans, ``families/chunk_plan.py`` and
``families/block_plan.py``). Everything here is pure integer arithmetic on
timeline frame indices.
"""

from __future__ import annotations

from dataclasses import dataclass

#: A chunk's name in its plan: (kind, index); the kind is a label the plan chooses.
ChunkKey = tuple[str, int]


@dataclass(frozen=True)
class Piece:
    """Frames of one generated window that become final output.

    ``source`` names the chunk whose latents hold the frames, ``offset`` is the
    position of the first frame inside that chunk's generated window.
    """

    source: ChunkKey
    offset: int
    start: int
    end: int

    def clipped(self, total_frames: int | None) -> Piece | None:
        """This piece trimmed to ``[0, total_frames)``; None when nothing is left."""
        end = self.end if total_frames is None else min(self.end, total_frames)
        if end <= self.start:
            return None
        return Piece(self.source, self.offset, self.start, end)


@dataclass(frozen=True)
class Chunk:
    """One model call on the timeline.

    The generated window is ``[window_start, window_start + window_frames)``;
    positions listed in ``cond_positions`` hold conditioning frames (motion
    frames or anchors) whose predictions are discarded. The loop fills them
    from held latents, except in the plan's first chunk, whose stages condition
    on the reference. ``held``: the loop keeps this chunk's latents for later
    chunks' conditioning and for pieces published later (the plan's
    ``max_held`` bounds how many).
    """

    kind: str
    index: int
    window_start: int
    window_frames: int
    cond_positions: tuple[int, ...]
    contributes: tuple[int, int]
    publishes: tuple[Piece, ...]
    held: bool

    @property
    def window_end(self) -> int:
        return self.window_start + self.window_frames

    @property
    def cond_frames(self) -> tuple[int, ...]:
        """Timeline indices of the conditioning frames, in window order."""
        return tuple(self.window_start + p for p in self.cond_positions)

    @property
    def key(self) -> ChunkKey:
        return (self.kind, self.index)

    @property
    def name(self) -> str:
        return f"{self.kind}{self.index}"


@dataclass(frozen=True)
class FrameLayout:
    """How timeline (latent) frames map to video frames, for VAEs that compress time.

    The first timeline frame covers ``first`` video frames, every later one
    ``stride`` (a causal video VAE with temporal stride 4: 1, then 4). The default, 1
    and 1, is a timeline of video frames.
    """

    stride: int = 1
    first: int = 1

    def __post_init__(self) -> None:
        if self.stride < 1 or not 1 <= self.first <= self.stride:
            raise ValueError(f"need stride >= 1 and 1 <= first <= stride, got stride {self.stride}, first {self.first}")

    def video_start(self, frame: int) -> int:
        """First video frame of timeline frame ``frame`` (frames before the timeline count ``stride`` each)."""
        return frame * self.stride if frame <= 0 else self.first + (frame - 1) * self.stride

    def video_range(self, start: int, end: int) -> tuple[int, int]:
        """Video frames ``[a, b)`` of timeline frames ``[start, end)``."""
        return self.video_start(start), self.video_start(end)

    def window_video_range(self, start: int, end: int) -> tuple[int, int]:
        """Video frames of a generated window as the model sees it: its first frame covers ``first`` video frames."""
        return self.video_start(start + 1) - self.first, self.video_start(end)

    def timeline_frames(self, video_frames: int) -> int:
        """The fewest timeline frames that cover ``video_frames`` video frames."""
        if video_frames <= 0:
            return 0
        return 1 + -(-(video_frames - self.first) // self.stride)
