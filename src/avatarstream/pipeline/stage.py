"""Stage: a typed unit of execution that binds modules to the chunk loop.

A stage declares which values it reads and writes; the pipeline checks the
graph when it is built, so a missing input fails at construction, not in the
middle of a session. Phases:

- ``init``  runs once per request (reference and text encoding),
- ``chunk`` runs once per executed N- or I-chunk (context, generation),
- ``final`` runs once per stretch of frames that became final (SR, decode).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, ClassVar, Literal

if TYPE_CHECKING:
    from avatarstream.pipeline.state import StageContext
    from avatarstream.runtime.module import Module

Phase = Literal["init", "chunk", "final"]
PHASES: tuple[Phase, ...] = ("init", "chunk", "final")


class Stage(ABC):
    """Base class for stages. Subclasses set the class attributes and ``run``."""

    name: ClassVar[str]
    phase: ClassVar[Phase]
    reads: ClassVar[tuple[str, ...]] = ()
    writes: ClassVar[tuple[str, ...]] = ()

    def modules(self) -> tuple[Module, ...]:
        """The modules this stage calls; the runtime makes them resident around ``run``."""
        return ()

    def audio_context_frames(self) -> tuple[int, int]:
        """Frames of audio needed before and after a chunk's window (for readiness and trimming)."""
        return (0, 0)

    @abstractmethod
    def run(self, ctx: StageContext) -> None:
        """Read ``self.reads`` from ``ctx`` and write every name in ``self.writes``."""

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r} ({self.phase})>"
