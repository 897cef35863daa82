"""Audio path of the InfiniteTalk family on known inputs: windows, the end-of-audio mirror, the adapter's grouping."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from safetensors.torch import load_file

from avatarstream.models.infinitetalk.audio_features import audio_windows, extend_for_last_chunk, feature_frames, loudness_normalize, window_indices
from avatarstream.models.infinitetalk.audio_projection import group_by_latent_frame


def test_window_indices_clamp_at_both_ends() -> None:
    idx = window_indices(0, 3, 4)
    assert idx.tolist() == [[0, 0, 0, 1, 2], [0, 0, 1, 2, 3], [0, 1, 2, 3, 3]]


def test_windows_equal_the_reference_windows(golden_dir: Path) -> None:
    t = load_file(str(golden_dir / "cases" / "audio.safetensors"))
    for name, start in (("chunk0", 0), ("chunk1", 4), ("last", 80)):
        assert torch.equal(audio_windows(t["features"], start, 9), t[f"window_{name}"])
        assert window_indices(start, 9, 92 if name == "last" else 89).tolist() == t[f"window_indices_{name}"].tolist()


def test_end_of_audio_mirrors_the_last_frames() -> None:
    features = torch.arange(10.0).view(10, 1, 1)
    assert torch.equal(extend_for_last_chunk(features, 0, 9), features)  # ends before the audio does
    extended = extend_for_last_chunk(features, 4, 9)  # 3 frames past the end: mirror 3 + 3
    assert extended.flatten().tolist() == list(range(10)) + [9, 8, 7, 6, 5, 4]


def test_adapter_groups_each_latent_frame_as_the_architecture_does() -> None:
    frames, window = 9, 5  # 1 + 4*2 pixel frames -> 3 latent frames
    code = torch.arange(frames)[:, None] * 10 + torch.arange(window)  # pixel frame i, window slot k -> 10*i + k
    audio = code.view(1, frames, window, 1, 1).float()
    first, later = group_by_latent_frame(audio)
    assert first.flatten().tolist() == [0, 1, 2, 3, 4]
    # latent frame 1 covers pixel frames 1..4: past+present of 1, present of 2 and 3, present+future of 4
    assert later[0, 0].tolist() == [10, 11, 12, 22, 32, 42, 43, 44]
    assert later[0, 1].tolist() == [50, 51, 52, 62, 72, 82, 83, 84]


def test_loudness_normalisation_targets_minus_23_lufs_and_skips_silence() -> None:
    import pyloudnorm

    rate = 16000
    t = np.arange(rate * 2) / rate
    tone = (0.05 * np.sin(2 * np.pi * 440 * t)).astype(np.float32)
    out = loudness_normalize(tone)
    assert abs(pyloudnorm.Meter(rate).integrated_loudness(out.astype(np.float64)) + 23) < 0.01
    silence = np.zeros(rate, dtype=np.float32)
    assert np.array_equal(loudness_normalize(silence), silence)


def test_feature_frames_truncate_to_video_rate() -> None:
    assert feature_frames(57452) == 89  # the golden clip
    assert feature_frames(16000) == 25 and feature_frames(15999) == 24


def test_audio_shorter_than_a_loudness_block_is_left_alone() -> None:
    short = np.full(3000, 0.1, dtype=np.float32)  # under BS.1770's 400 ms block
    assert np.array_equal(loudness_normalize(short), short)


def test_feature_frames_are_exact_on_whole_frames() -> None:
    assert int(37120 / 16000 * 25) == 57  # the float formula loses a frame here ...
    assert feature_frames(37120) == 58  # ... integer arithmetic does not
    assert all(feature_frames(640 * n) == n for n in range(1, 2000))
