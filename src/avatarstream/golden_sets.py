"""Run a golden set with the family that ports its reference implementation (``golden.json``'s ``reference.repo``).

A family registers its parity through two optional members (``families.base.OPTIONAL``): ``golden_repos``, the
reference repositories it ports, and ``parity``, its cases; a whole-video set also needs ``golden_render_arguments``,
the arguments of ``avatarstream.render`` that run the set as the reference CLI did. This module sits above the families
and the API (it renders through ``avatarstream.render``, as the CLI does); nothing below it knows it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from avatarstream.errors import InputError
from avatarstream.families.base import optional
from avatarstream.families.registry import FAMILIES, UPSCALERS, family_class, names
from avatarstream.parity.checks import Check
from avatarstream.parity.fixture import GoldenSet
from avatarstream.parity.video import frame_checks, golden_frames
from avatarstream.publish.frames import check_frames_folder


def run_golden_set(root: Path, *, frames: Path | None = None, on_case: Callable[[str], None] = lambda name: None) -> list[Check]:
    """Every check of the set at ``root``, run by the family whose ``golden_repos`` names the set's reference repository.

    A whole-video set is rendered through ``avatarstream.render`` into ``frames`` (a new or empty folder) and its frames
    compared with the set's; without ``cases/frames.safetensors`` the frames are written and there are no checks.
    """
    gs = GoldenSet.open(root)
    if not gs.whole_video:
        if frames is not None:
            raise InputError(f"{root} is a component set (golden.json has cases); --frames is for whole-video sets")
        return _component_checks(gs, on_case)
    if frames is None:
        raise InputError(f"{root} is a whole-video set: give --frames OUT, a new or empty folder for the rendered frames")
    check_frames_folder(frames)
    arguments = optional(_porting_family(gs), "golden_render_arguments")
    if arguments is None:
        raise InputError(f"the family porting {gs.reference_repo!r} cannot render whole-video sets")
    on_case("video")
    from avatarstream.api import render  # the render path the CLI takes (loaded only for whole-video sets)
    from avatarstream.publish.outputs import Outputs

    render(out=Outputs(frames=frames), **arguments(gs))
    golden = golden_frames(gs)
    return [] if golden is None else frame_checks(gs, frames, golden)


def _component_checks(gs: GoldenSet, on_case: Callable[[str], None]) -> list[Check]:
    """The family's cases; an error the set's tensors or settings cause (a wrong shape or type) is one line naming the case."""
    cases: Callable[[GoldenSet, Callable[[str], None]], list[Check]] = optional(_porting_family(gs), "parity")
    current = ["(loading weights)"]

    def starting(name: str) -> None:
        current[0] = name
        on_case(name)

    try:
        return cases(gs, starting)
    except (RuntimeError, ValueError, IndexError, TypeError) as exc:  # the set's tensors and settings are input: a wrong shape or type is the set's
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InputError(
            f"golden set {gs.root}, case {current[0]}: {first}; its tensors or settings do not have the shapes and types the model expects "
            "(was it made for the checkpoint in its weights/?)"
        ) from exc


def _porting_family(gs: GoldenSet) -> Any:
    """The class of the family (or upscaler) whose ``golden_repos`` names the set's reference repository."""
    repo = gs.reference_repo
    for kind in (FAMILIES, UPSCALERS):
        porting = [name for name in names(kind) if repo in optional(family_class(name, kind), "golden_repos")]
        if porting:
            return family_class(porting[0], kind)
    raise InputError(f"no installed model family or upscaler ports {repo!r} (golden.json's reference.repo); `avatarstream families` lists them")
