"""Whole-video parity: the frames a render wrote (PNG) against the reference's uint8 frames, by the set's tolerances.

A faithful port differs from the reference in float summation order only, so
its frames match to within a few values off by one; the tolerances (from the
set's ``golden.json``) say how many, and how close in PSNR over all values and
in the worst frame. The mean signed difference catches a uint8 conversion
that rounds where the reference truncates.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
from PIL import Image

from avatarstream.parity.checks import Check
from avatarstream.parity.fixture import GoldenSet
from avatarstream.publish.frames import frame_paths
from avatarstream.weights.files import read_safetensors

CASE = "video"
FRAMES_FILE = "cases/frames.safetensors"


def psnr(squared_error: float, values: int) -> float:
    """PSNR in dB of uint8 values from their summed squared error (inf when there is none)."""
    return math.inf if squared_error == 0 else 10 * math.log10(255.0**2 * values / squared_error)


def golden_frames(gs: GoldenSet) -> np.ndarray | None:
    """The reference's uint8 frames [T, H, W, 3], or None when the set has none to compare with."""
    path = gs.root / FRAMES_FILE
    if not path.is_file():
        return None
    return read_safetensors(path)["frames"].numpy()


def frame_checks(gs: GoldenSet, frames_dir: Path, golden: np.ndarray) -> list[Check]:
    """The set's checks of the PNG frames in ``frames_dir`` against ``golden``, reading one frame at a time."""
    paths = frame_paths(frames_dir)
    if not paths:
        return [Check(CASE, f"frames (none in {frames_dir})", math.inf, 0.0)]
    with Image.open(paths[0]) as first:
        shape = (len(paths), first.height, first.width, 3)
    if shape != golden.shape:
        return [Check(CASE, f"shape {shape} != {golden.shape}", math.inf, 0.0)]
    squared, differing, signed, worst = 0.0, 0, 0, math.inf
    for path, reference in zip(paths, golden, strict=True):
        with Image.open(path) as image:
            error = np.asarray(image.convert("RGB"), dtype=np.int64) - reference.astype(np.int64)
        frame_squared = float(np.square(error).sum())
        squared += frame_squared
        differing += int(np.count_nonzero(error))
        signed += int(error.sum())
        worst = min(worst, psnr(frame_squared, error.size))
    values = golden.size
    return [
        Check(CASE, "psnr_db", psnr(squared, values), gs.video_tolerance("frames_psnr_db_min"), "min"),
        Check(CASE, "worst_frame_psnr_db", worst, gs.video_tolerance("frames_psnr_min_frame_db_min"), "min"),
        Check(CASE, "fraction_of_values_differing", differing / values, gs.video_tolerance("frames_frac_differ_max")),
        Check(CASE, "abs_mean_signed_difference", abs(signed / values), gs.video_tolerance("frames_abs_mean_signed_diff_max")),
    ]
