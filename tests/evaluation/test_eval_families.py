"""`avatarstream eval` takes its model from the registry: any family that can switch its seam smoothing off is measured,
and for one that cannot, eval says so in one line, naming the family and what it lacks, before anything loads."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

import pytest
import torch

from avatarstream.cli.main import main
from avatarstream.errors import InputError
from avatarstream.evaluation.run import evaluate, seam_smoothing_off
from avatarstream.families.options import FamilyOptions
from avatarstream.families.registry import family_class, load_family


def test_a_family_that_cannot_switch_its_seam_smoothing_off_is_refused_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["eval", "--model", "colourbars", "--out", str(tmp_path / "eval"), "--clips", "1", "--minutes", "0", "--threads", "1"])
    err = capsys.readouterr().err
    assert code == 2
    assert err == (
        "error: the colourbars model cannot be evaluated: eval measures its seams with and without seam smoothing, "
        "and it offers no seam_smoothing_off (the options that switch its seam smoothing off)\n"
    )
    assert not (tmp_path / "eval").exists()


def test_evaluate_refuses_a_loaded_family_before_it_renders() -> None:
    family = load_family("colourbars")
    with pytest.raises(InputError, match="^the colourbars model cannot be evaluated: .* no seam_smoothing_off"):
        evaluate(family, torch.device("cpu"), clips=1, clip_seconds=2.0, long_minutes=0)


def test_the_families_with_interpolated_seams_switch_them_off_with_their_chunk_plan_option() -> None:
    for name in ("demo", "demo-tiny"):
        assert seam_smoothing_off(family_class(name)) == {"interp_frames": 0}


def test_a_family_that_declares_the_member_is_taken_at_its_word() -> None:
    class Declares:
        name = "declares"
        Options = FamilyOptions
        seam_smoothing_off: ClassVar[dict[str, object]] = {"blend": False}

    assert seam_smoothing_off(Declares) == {"blend": False}  # type: ignore[arg-type]
