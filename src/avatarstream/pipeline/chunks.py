"""Chunks on the timeline, the N/I chunk plan and the timeline-to-video frame layout (DESIGN.md §4).

A ``Chunk`` is one model call and the pieces of output it makes final; which
chunks run, in which order, is a plan's business (``pipeline.plan.Plan``).
``ChunkPlan`` is the plan of the N/I families: N-chunks make the primary
timeline; I-chunks regenerate the first ``a`` frames of every N-chunk after
the first, anchored on the last frame of the previous N-chunk and on frame
``a`` of the next one, so seams are smoothed. Everything here is pure integer
arithmetic on timeline frame indices so it can be tested exhaustively and
reused by any model family.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from avatarstream.errors import InputError

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
class ChunkPlan:
    """Chunk geometry: ``chunk_frames`` (L), ``interp_frames`` (a), ``motion_frames`` (m).

    Execution order is N0, N1, I0, N2, I1, ...; the published timeline is
    N0 · I0 · N1[a:] · I1 · N2[a:] · ...; with ``interp_frames == 0`` there are
    no I-chunks and every N-chunk is published as soon as it is generated.

    ``first_cond`` says where N0's conditioning is. ``None`` (the default): N0
    sees m frames of the reference before the timeline, which are not
    published. A number c: the reference is part of the timeline, as in models
    whose first latent frame *is* the reference image (Wan I2V): N0's window is
    the timeline's first L + m frames, its first c frames are conditioning and
    all of them are published; every later chunk sits m frames further on.
    """

    chunk_frames: int
    interp_frames: int
    motion_frames: int
    first_cond: int | None = None

    def __post_init__(self) -> None:
        L, a, m = self.chunk_frames, self.interp_frames, self.motion_frames
        if a < 0:
            raise InputError(f"--interp-frames must be 0 or more, got {a}; 0 switches I-chunks off")
        least = max(1, m, a + 1)
        if L < least:
            raise InputError(
                f"--chunk-frames {L} is too short: with --interp-frames {a} and the model's {m} motion frames it must be "
                f"{least} or more (at least 1, at least the motion frames, more than the interpolation span)"
                + (f"; or keep {L} and pass --interp-frames 0 to {L - 1}" if L >= max(1, m) else "")
            )
        if self.first_cond is not None and not 0 < self.first_cond <= max(self.motion_frames, 1):
            raise ValueError(f"first_cond must be between 1 and the motion frames ({self.motion_frames}), got {self.first_cond}")

    @property
    def interpolates(self) -> bool:
        return self.interp_frames > 0

    @property
    def offset(self) -> int:
        """Where N1's own frames start, minus L: m when the reference is in the timeline, else 0."""
        return 0 if self.first_cond is None else self.motion_frames

    def n_chunk(self, k: int) -> Chunk:
        """N(k): new frames ``[kL, (k+1)L)`` (shifted by ``offset``) after ``m`` motion frames from N(k-1)."""
        L, a, m = self.chunk_frames, self.interp_frames, self.motion_frames
        start = k * L + self.offset
        if k == 0 and self.first_cond is not None:
            piece = Piece(("N", 0), 0, 0, start + L)
            return Chunk("N", 0, 0, m + L, tuple(range(self.first_cond)), (0, start + L), (piece,), held=True)
        own_from = a if (self.interpolates and k > 0) else 0
        contributes = (start + own_from, start + L)
        piece = Piece(("N", k), m + own_from, *contributes)
        publishes = (piece,) if (k == 0 or not self.interpolates) else ()
        return Chunk("N", k, start - m, m + L, tuple(range(m)), contributes, publishes, held=True)

    def i_chunk(self, k: int) -> Chunk:
        """I(k): the ``a`` frames after N(k), between the last frame of N(k) and frame ``a`` of N(k+1).

        Publishing I(k) also releases N(k+1)[a:], which waited for it.
        """
        if not self.interpolates:
            raise ValueError("this plan has no I-chunks (interp_frames == 0)")
        L, a = self.chunk_frames, self.interp_frames
        seam = (k + 1) * L + self.offset
        contributes = (seam, seam + a)
        own = Piece(("I", k), 1, *contributes)
        released = self.n_chunk(k + 1).contributes
        waiting = Piece(("N", k + 1), self.motion_frames + a, *released)
        return Chunk("I", k, seam - 1, a + 2, (0, a + 1), contributes, (own, waiting), held=False)

    @property
    def max_held(self) -> int:
        """N-chunks whose latents the loop keeps: the one conditioning the next chunk, and with I-chunks the one waiting for its I-chunk."""
        return 2 if self.interpolates else 1

    def first(self) -> Chunk:
        return self.n_chunk(0)

    def chunk(self, key: ChunkKey) -> Chunk:
        """The chunk named ``key`` (("N", k) or ("I", k)), as a resumed run rebuilds it."""
        kind, index = key
        if index < 0:
            raise ValueError(f"chunk indices start at 0, got {kind}{index}")
        if kind == "N":
            return self.n_chunk(index)
        if kind == "I":
            return self.i_chunk(index)
        raise ValueError(f"this plan has N- and I-chunks, not {kind!r}")

    def steady_frames(self) -> tuple[int, int]:
        """The timeline frames N1 adds (its own frames): what every N-chunk after the first adds."""
        second = self.n_chunk(1)
        return second.window_start + self.motion_frames, second.window_end

    def next_after(self, chunk: Chunk) -> Chunk:
        """The chunk executed after ``chunk``: N0, N1, I0, N2, I1, N3, I2, ..."""
        if not self.interpolates:
            return self.n_chunk(chunk.index + 1)
        if chunk.kind == "N" and chunk.index >= 1:
            return self.i_chunk(chunk.index - 1)
        n_index = chunk.index + 1 if chunk.kind == "N" else chunk.index + 2
        return self.n_chunk(n_index)

    def schedule(self, total_frames: int | None = None) -> Iterator[Chunk]:
        """Chunks in execution order; stops before the first N-chunk at or past ``total_frames``.

        With ``total_frames=None`` the schedule is open-ended (live sessions);
        the caller stops when the audio ends.
        """
        chunk = self.first()
        while total_frames is None or not self.is_past_end(chunk, total_frames):
            yield chunk
            chunk = self.next_after(chunk)

    def is_past_end(self, chunk: Chunk, total_frames: int) -> bool:
        """True when ``chunk`` is an N-chunk whose own frames start at or after the last frame.

        An I-chunk is never past the end on its own: it runs only after the
        N-chunk that follows it, which was checked already.
        """
        if chunk.kind != "N":
            return False
        own_start = chunk.index * self.chunk_frames + (self.offset if chunk.index > 0 else 0)
        return own_start >= total_frames

    def num_chunks(self, total_frames: int) -> tuple[int, int]:
        """(N-chunks, I-chunks) a timeline of ``total_frames`` frames needs."""
        n = max(-(-(total_frames - self.offset) // self.chunk_frames), 1) if total_frames > 0 else 0
        return n, (max(n - 1, 0) if self.interpolates else 0)


@dataclass(frozen=True)
class FrameLayout:
    """How timeline (latent) frames map to video frames, for VAEs that compress time.

    The first timeline frame covers ``first`` video frames, every later one
    ``stride`` (a causal video VAE such as Wan's: 1, then 4). The default, 1
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
