"""The procedural avatar: deterministic, anti-aliased, and its mouth follows the audio."""

from __future__ import annotations

import numpy as np

from avatarstream.avatars import FRAME_SIZE, Identity, Pose, motion_track, mouth_track, reference_image, render_clip, render_frame
from avatarstream.avatars.detect import looks_procedural
from avatarstream.evaluation.lipreader import mouth_openness
from avatarstream.evaluation.metrics import correlation

RATE = 16000


def syllables(seconds: float, rate_hz: float = 3.0, seed: int = 0) -> np.ndarray:
    """Voice-like bursts (a 180 Hz buzz with harmonics) whose loudness rises and falls like syllables."""
    t = np.arange(int(seconds * RATE)) / RATE
    buzz = sum(np.sin(2 * np.pi * 180 * k * t) / k for k in range(1, 12))
    envelope = np.clip(np.sin(2 * np.pi * rate_hz * t + np.random.default_rng(seed).uniform(0, 6)), 0, None) ** 2
    return (0.1 * buzz * envelope).astype(np.float32)


def test_same_seeds_same_video_and_identities_differ() -> None:
    mouth = mouth_track(syllables(0.6), RATE)
    a = render_clip(Identity.from_seed(7), mouth, motion_seed=3)
    b = render_clip(Identity.from_seed(7), mouth, motion_seed=3)
    other = render_clip(Identity.from_seed(8), mouth, motion_seed=3)
    assert a.shape == (15, FRAME_SIZE, FRAME_SIZE, 3) and a.dtype == np.uint8
    np.testing.assert_array_equal(a, b)
    assert np.abs(a.astype(int) - other.astype(int)).mean() > 10


def test_identity_parameters_come_from_the_seed() -> None:
    assert Identity.from_seed(5) == Identity.from_seed(5)
    looks = {(i.hair_style, i.glasses, i.skin) for i in map(Identity.from_seed, range(30))}
    assert len(looks) == 30


def test_edges_are_anti_aliased() -> None:
    identity = Identity.from_seed(1)
    frame = render_frame(identity, Pose(dx=0.37)).astype(float)
    # the cheek edge on the head's centre row: background left of it, skin right of it
    edge = int(128 + 0.37 - identity.face_width)
    outside, inside, between = frame[112, edge - 3], frame[112, edge + 3], frame[112, edge]
    share = (between - outside) / (inside - outside)
    assert np.all((share > 0.1) & (share < 0.9)), "the edge pixel should be a mix of both sides"


def test_mouth_follows_loudness_and_stays_shut_in_silence() -> None:
    audio = np.concatenate([np.zeros(RATE, np.float32), syllables(3.0), np.zeros(RATE, np.float32)])
    mouth = mouth_track(audio, RATE)
    assert len(mouth) == 125
    assert mouth.openness[:20].max() < 0.05 and mouth.openness[-15:].max() < 0.05
    assert mouth.openness[25:100].max() > 0.5
    frame_env = np.array([np.sqrt(np.mean(audio[i * 640 : (i + 1) * 640] ** 2)) for i in range(125)])
    assert correlation(mouth.openness[1:], frame_env[:-1]) > 0.7  # one frame of articulatory lag


def test_rendered_mouth_is_what_the_lip_reader_reads() -> None:
    mouth = mouth_track(syllables(2.0, seed=2), RATE)
    frames = render_clip(Identity.from_seed(11), mouth, motion_seed=5)
    assert correlation(mouth_openness(frames), mouth.openness) > 0.97


def test_motion_starts_from_the_reference_pose_and_blinks() -> None:
    motion = motion_track(25 * 20, seed=4)
    assert abs(motion.dx[0]) < 1e-9 and abs(motion.angle[0]) < 1e-9
    assert motion.blink.max() > 0.9 and (motion.blink > 0).mean() < 0.2
    assert np.abs(np.diff(motion.dx)).max() < 0.5  # slow: under half a pixel per frame


def test_reference_is_neutral_and_recognised_as_procedural() -> None:
    identity = Identity.from_seed(3)
    reference = reference_image(identity)
    np.testing.assert_array_equal(reference, render_frame(identity, Pose()))
    assert mouth_openness(reference)[0] < 2.0
    assert looks_procedural(reference)
    rng = np.random.default_rng(0)
    photo_like = np.clip(np.kron(rng.uniform(0, 255, (16, 16, 3)), np.ones((16, 16, 1))) + rng.normal(0, 4, (256, 256, 3)), 0, 255)
    assert not looks_procedural(photo_like.astype(np.uint8))
