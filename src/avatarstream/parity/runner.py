"""Run a golden set with the family that ports its reference implementation (``golden.json``'s ``reference.repo``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from avatarstream.errors import InputError
from avatarstream.families.registry import family_class, names
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
        cases: Callable[[GoldenSet, Callable[[str], None]], list[Check]] = _porting_family(gs).parity
        return cases(gs, on_case)
    if frames is None:
        raise InputError(f"{root} is a whole-video set: give --frames OUT, a new or empty folder for the rendered frames")
    check_frames_folder(frames)
    family = _porting_family(gs)
    if not hasattr(family, "render_golden_video"):
        raise InputError(f"the family porting {gs.reference_repo!r} cannot render whole-video sets")
    on_case("video")
    family.render_golden_video(gs, frames)
    golden = golden_frames(gs)
    return [] if golden is None else frame_checks(gs, frames, golden)


def _porting_family(gs: GoldenSet) -> Any:
    repo = gs.reference_repo
    porting = [name for name in names() if repo in getattr(family_class(name), "golden_repos", ())]
    if not porting:
        raise InputError(f"no installed model family ports {repo!r} (golden.json's reference.repo); `avatarstream families` lists them")
    return family_class(porting[0])
