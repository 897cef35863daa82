"""The names of the parallel strategies: the built-in ones and those installed packages register (``strategy.py``).

Listing the names imports no strategy, so ``--parallel`` is checked before anything loads.
"""

from __future__ import annotations

from functools import cache
from importlib.metadata import entry_points

from avatarstream.errors import InputError

ENTRY_POINT_GROUP = "avatarstream.parallel"
#: The strategies this package ships: word -> "module:Class" (imported when a layout names them).
BUILTIN = {
    "sp": "avatarstream.runtime.parallel.ulysses:SequenceParallel",
    "cfg": "avatarstream.runtime.parallel.guidance:GuidanceParallel",
    "steps": "avatarstream.runtime.parallel.steps:StepParallel",
    "decode": "avatarstream.runtime.parallel.stage_pipe:DecodeRank",
}


@cache
def registered() -> dict[str, str]:
    """Every strategy word -> its class's "module:Class", the built-in ones first (a package cannot replace them)."""
    found = dict(BUILTIN)
    for point in entry_points(group=ENTRY_POINT_GROUP):
        found.setdefault(point.name, point.value)
    return found


def known(key: str) -> str:
    """The "module:Class" of strategy ``key``; an unknown word is an InputError listing the installed ones."""
    target = registered().get(key)
    if target is None:
        raise InputError(f"--parallel: unknown part {key!r}; the strategies installed are: {', '.join(registered())}")
    return target
