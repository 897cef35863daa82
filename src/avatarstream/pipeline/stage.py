"""Stage: a typed unit of execution that binds modules to the chunk loop.

A stage declares which values it reads and writes; the pipeline checks the
graph when it is built, so a missing input fails at construction, not in the
middle of a session. Phases:

- ``init``  runs once per request (reference and text encoding),
- ``chunk`` runs once per executed chunk of the plan (context, generation),
- ``final`` runs once per stretch of frames that became final (SR, decode).

What a stage keeps between runs lives in its session cache (``ctx.cache``);
what of it a session needs to carry on in another process is the stage's to
say (``resume_state`` / ``restore_cache``), so the loop copies only that.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any, ClassVar, Literal

if TYPE_CHECKING:
    from avatarstream.pipeline.state import StageContext
    from avatarstream.runtime.module import Module

Phase = Literal["init", "chunk", "final"]
PHASES: tuple[Phase, ...] = ("init", "chunk", "final")
Role = Literal["generate"]


class Stage(ABC):
    """Base class for stages. Subclasses set the class attributes and ``run``."""

    name: ClassVar[str]
    phase: ClassVar[Phase]
    reads: ClassVar[tuple[str, ...]] = ()
    writes: ClassVar[tuple[str, ...]] = ()
    #: What the stage does, for tools that compare families by it rather than by stage name (benchmarks):
    #: ``generate`` is the chunk stage that runs the generator (the DiT) and writes the latents.
    role: ClassVar[Role | None] = None
    #: The stage's whole cache is small and fixed in size (a causal decoder's): a resumed session takes it as it is.
    resumes_with_cache: ClassVar[bool] = False
    #: The stage reads the whole audio before the first chunk (a model that encodes the file in one pass): the loop reads
    #: the source to its end first, so such a pipeline suits files, not live sessions, and holds the whole audio once.
    needs_whole_audio: ClassVar[bool] = False
    #: The stage gives out fewer frames than it is given and the rest later (a model that needs frames ahead, such as a
    #: streaming super-resolution one): only the last final stage may, its frames are the oldest not yet out
    #: (``frame_ledger.py`` pairs them with their audio), and ``flush`` gives what it still holds when the run ends.
    holds_frames: ClassVar[bool] = False

    def modules(self) -> tuple[Module, ...]:
        """The modules this stage calls; the runtime makes them resident around ``run``."""
        return ()

    def audio_context_frames(self) -> tuple[int, int]:
        """Frames of audio needed before and after a chunk's window (for readiness and trimming)."""
        return (0, 0)

    @abstractmethod
    def run(self, ctx: StageContext) -> None:
        """Read ``self.reads`` from ``ctx`` and write every name in ``self.writes``."""

    def flush(self, ctx: StageContext) -> None:
        """The run's last frames went in: write ``frames`` with every frame still held (called once, for ``holds_frames`` stages)."""
        raise NotImplementedError(f"stage {self.name!r} holds frames but cannot give them out at the end (it has no flush)")

    def resume_state(self, cache: Any) -> Any:
        """What a resumed session needs of this stage's ``cache`` to make the same output; None (the default): nothing.

        Called at every chunk boundary (a final stage's right after it ran, on
        the thread that ran it), so it must be cheap and must not change
        ``cache``: the loop weighs what it returns for the run's report, and
        copies its tensors to the host when a state is taken. Return a small,
        fixed-size part: a causal decoder returns its cache. A stage with large
        per-step state (KV caches of a big model) returns None, or just the
        conditioning it needs, and recomputes the rest from what it holds when
        it is restored; the family documents what that recomputation costs.
        The default: the cache itself where ``resumes_with_cache`` says so, else nothing.
        """
        return cache if self.resumes_with_cache else None

    def restore_cache(self, saved: Any) -> Any:
        """The cache a resumed session starts this stage with, from what ``resume_state`` returned (on the run's device).

        Called only for stages whose ``resume_state`` returned something. The
        default: what was saved where ``resumes_with_cache`` says so, else None
        (the stage starts with a fresh cache).
        """
        return saved if self.resumes_with_cache else None

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r} ({self.phase})>"
