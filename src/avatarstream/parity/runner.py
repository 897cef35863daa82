"""Run a golden set with the family that ports its reference implementation (``golden.json``'s ``reference.repo``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from avatarstream.errors import InputError
from avatarstream.families.registry import family_class, names
from avatarstream.parity.checks import Check
from avatarstream.parity.fixture import GoldenSet


def run_golden_set(root: Path, *, on_case: Callable[[str], None] = lambda name: None) -> list[Check]:
    """Every case of the set at ``root``, run by the family whose ``golden_repos`` names the set's reference repository."""
    gs = GoldenSet.open(root)
    repo = gs.reference_repo
    porting = [name for name in names() if repo in getattr(family_class(name), "golden_repos", ())]
    if not porting:
        raise InputError(f"no installed model family ports {repo!r} (golden.json's reference.repo); `avatarstream families` lists them")
    cases: Callable[[GoldenSet, Callable[[str], None]], list[Check]] = family_class(porting[0]).parity  # type: ignore[attr-defined]
    current = ["(loading weights)"]

    def starting(name: str) -> None:
        current[0] = name
        on_case(name)

    try:
        return cases(gs, starting)
    except (RuntimeError, ValueError, IndexError, TypeError) as exc:  # the set's tensors and settings are input: a wrong shape or type is the set's
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InputError(
            f"golden set {root}, case {current[0]}: {first}; its tensors or settings do not have the shapes and types the model expects "
            "(was it made for the checkpoint in its weights/?)"
        ) from exc
