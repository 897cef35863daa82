"""The stage graph: what each phase is given and must make, the checks made when a pipeline is built, and the order hints.

A stage declares what it reads and writes (``stage.py``); ``validate_graph``
checks that every read has an earlier writer, so a missing input is an error
when the pipeline is built, never in the middle of a session.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from avatarstream.errors import PipelineGraphError
from avatarstream.pipeline.stage import PHASES, Phase, Stage

#: Values the pipeline itself provides to each phase. They come from the chunk plan, not from one family: a final stage
#: gets its piece's ``latents`` and ``frames_range``, and, to decode with the frames around it as context, the whole
#: generated window the piece is cut from (``window_latents``) and where the piece starts in it (``window_offset``).
PROVIDED: dict[Phase, frozenset[str]] = {
    "init": frozenset({"reference_image", "prompt"}),
    "chunk": frozenset({"chunk", "audio", "conditioning"}),
    "final": frozenset({"latents", "frames_range", "window_latents", "window_offset"}),
}
#: Values each phase must produce for the loop to continue.
REQUIRED: dict[Phase, frozenset[str]] = {"init": frozenset(), "chunk": frozenset({"latents"}), "final": frozenset({"frames"})}


def with_next(stages: Sequence[Stage], after: Stage) -> Iterator[tuple[Stage, Stage]]:
    """Each stage with the one that runs after it (``after`` after the last), for the runtime's hints; none for no stages."""
    return zip(stages, (*stages[1:], after)[: len(stages)], strict=True)


def independent_prefix(chunk_stages: Sequence[Stage]) -> tuple[Stage, ...]:
    """The leading chunk stages that read nothing an earlier chunk produces (so they can run a chunk ahead).

    ``conditioning`` and the outputs of later chunk stages depend on the
    previous chunk; init values, ``chunk`` and ``audio`` do not.
    """
    per_chunk = {"conditioning"} | {w for stage in chunk_stages for w in stage.writes}
    ready: set[str] = set()
    prefix: list[Stage] = []
    for stage in chunk_stages[:-1]:  # the last chunk stage makes the latents: never ahead
        if not (set(stage.reads) & per_chunk) <= ready:
            break
        prefix.append(stage)
        ready |= set(stage.writes)
    return tuple(prefix)


def validate_graph(stages: Sequence[Stage]) -> None:
    """Check that every read has an earlier writer; raise a message that says how to fix it."""
    names = [s.name for s in stages]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise PipelineGraphError(f"stage names must be unique, found {duplicates} more than once")
    unknown = [s for s in stages if s.phase not in PHASES]
    if unknown:
        raise PipelineGraphError(f"stage {unknown[0].name!r} has unknown phase {unknown[0].phase!r}; use one of {PHASES}")
    init_values: set[str] = set(PROVIDED["init"])
    for phase in PHASES:
        available = set(PROVIDED[phase]) | init_values
        for stage in (s for s in stages if s.phase == phase):
            missing = [r for r in stage.reads if r not in available]
            if missing:
                raise PipelineGraphError(
                    f"stage {stage.name!r} ({phase}) reads {missing} but nothing before it writes "
                    f"{'it' if len(missing) == 1 else 'them'}; add a stage that writes "
                    f"{', '.join(repr(m) for m in missing)} earlier, or remove the read"
                )
            clash = sorted(set(stage.writes) & PROVIDED[phase])
            if clash:
                raise PipelineGraphError(f"stage {stage.name!r} writes {clash}, which the pipeline provides itself")
            available |= set(stage.writes)
        lacking = sorted(REQUIRED[phase] - available)
        if lacking:
            raise PipelineGraphError(f"no {phase} stage writes {lacking}; the chunk loop needs it")
        if phase == "init":
            init_values = available
    finals = [s for s in stages if s.phase == "final"]
    holding = [s.name for s in finals[:-1] if s.holds_frames]
    if holding or any(s.holds_frames and s.phase != "final" for s in stages):
        raise PipelineGraphError(f"stage {(holding or [s.name for s in stages if s.holds_frames])[0]!r} holds frames back: only the last final stage may")
