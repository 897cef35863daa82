"""The N/I chunk plan (DESIGN.md §4) the demo and InfiniteTalk families use; implements ``pipeline.plan.Plan``.

N-chunks make the primary timeline; I-chunks regenerate the first ``a``
frames of every N-chunk after the first, anchored on the last frame of the
previous N-chunk and on frame ``a`` of the next one, so seams are smoothed.
Everything here is pure integer arithmetic on timeline frame indices so it can
be tested exhaustively. Its errors name the options (``--chunk-frames``, ...)
of the families that expose its geometry.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from avatarstream.errors import InputError
from avatarstream.pipeline.chunks import Chunk, ChunkKey, Piece


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
