"""Eval metrics on inputs where the answer is known."""

from __future__ import annotations

import numpy as np
import pytest

from avatars.test_renderer import syllables
from avatarstream.avatars import Identity, mouth_track, reference_image, render_clip
from avatarstream.avatars.identity import HELD_OUT_IDENTITIES
from avatarstream.evaluation.metrics import (
    StreamMeter,
    correlation,
    frame_changes,
    identity_error,
    per_minute,
    seam_frames,
    seam_ratio,
)
from avatarstream.families.chunk_plan import ChunkPlan

RATE = 16000


@pytest.fixture(scope="module")
def ground_truth():
    """A held-out identity rendered straight from the audio: what a perfect model would output."""
    identity = Identity.from_seed(HELD_OUT_IDENTITIES + 1)
    mouth = mouth_track(syllables(6.0, rate_hz=2.7, seed=4), RATE)
    frames = render_clip(identity, mouth, motion_seed=9)
    return frames, mouth.openness, reference_image(identity)


def measure(frames: np.ndarray, reference: np.ndarray, piece: int = 12) -> dict[str, np.ndarray]:
    meter = StreamMeter(reference)
    for start in range(0, len(frames), piece):  # frames arrive in pieces, as from the pipeline
        meter.add(frames[start : start + piece])
    return meter.arrays()


def test_ground_truth_as_generated_gives_perfect_sync_and_no_seams(ground_truth) -> None:
    frames, truth, reference = ground_truth
    measured = measure(frames, reference, piece=7)
    assert correlation(measured["openness"], truth) > 0.98
    for interp in (3, 0):
        border = seam_frames(ChunkPlan(12, interp, 2), len(frames))
        assert 0.75 < seam_ratio(measured["changes"], border) < 1.3


def test_frozen_video_has_no_sync_and_no_identity_error(ground_truth) -> None:
    frames, truth, reference = ground_truth
    frozen = np.repeat(reference[None], len(frames), axis=0)
    measured = measure(frozen, reference)
    assert abs(correlation(measured["openness"], truth)) < 0.05
    assert np.allclose(measured["identity"], 0.0)
    other = reference_image(Identity.from_seed(HELD_OUT_IDENTITIES + 2))
    assert identity_error(other[None], reference)[0] > 5.0


def test_jumps_at_chunk_borders_raise_the_seam_ratio(ground_truth) -> None:
    frames, _, reference = ground_truth
    border = seam_frames(ChunkPlan(12, 3, 2), len(frames))
    jumpy = frames.astype(np.int16)
    for f in np.flatnonzero(border):
        jumpy[f:] += 6 if (f // 12) % 2 else -6  # a brightness step at every seam
    jumpy = np.clip(jumpy, 0, 255).astype(np.uint8)
    assert seam_ratio(measure(jumpy, reference)["changes"], border) > 1.5


def test_seam_frames_follow_the_published_timeline() -> None:
    assert np.flatnonzero(seam_frames(ChunkPlan(12, 3, 2), 40)).tolist() == [12, 15, 24, 27, 36, 39]
    assert np.flatnonzero(seam_frames(ChunkPlan(12, 0, 2), 40)).tolist() == [12, 24, 36]


def test_small_helpers() -> None:
    assert correlation(np.arange(5.0), np.arange(5.0) * 3 + 1) == pytest.approx(1.0)
    assert correlation(np.ones(5), np.arange(5.0)) == 0.0
    assert per_minute(np.r_[np.ones(1500), 3 * np.ones(1500), np.ones(100)], fps=25) == [1.0, 3.0]
    frames = np.zeros((3, 4, 4, 3), np.uint8)
    frames[1] += 10
    np.testing.assert_allclose(frame_changes(frames, None), [np.nan, 10.0, 10.0])
    np.testing.assert_allclose(frame_changes(frames, frames[1]), [10.0, 10.0, 10.0])
