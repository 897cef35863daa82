"""FlashHead's pure pieces against the golden set's tensors: timesteps, window indexing, colour correction and truncation."""

from __future__ import annotations

from pathlib import Path

import torch

from avatarstream.models.flashhead.audio_features import window_indices, windows
from avatarstream.models.flashhead.color import correct_colors, to_uint8
from avatarstream.models.flashhead.sampler import renoise, timesteps
from avatarstream.weights.files import read_safetensors

CASES = Path(__file__).parents[1] / "fixtures" / "flashhead-tiny" / "cases"


def test_the_shifted_four_step_table_is_the_references_exactly() -> None:
    assert torch.equal(timesteps(4, 5.0), read_safetensors(CASES / "stream_pro.safetensors")["timesteps"])
    assert timesteps(7, 5.0).shape == (8,) and timesteps(7, 5.0)[-1] == 0  # other counts: a linspace from 1000 to 1, then 0


def test_each_frame_takes_the_five_rows_around_it_clamped_to_the_buffer() -> None:
    audio = read_safetensors(CASES / "audio.safetensors")
    for c in range(3):
        assert torch.equal(windows(audio[f"c{c}_features"], audio[f"c{c}_audio"].shape[1]), audio[f"c{c}_audio"])
    assert window_indices(3, 4).tolist() == [[0, 0, 1, 2, 3], [0, 1, 2, 3, 3], [1, 2, 3, 3, 3]]


def test_the_last_step_renoises_to_the_clean_latent() -> None:
    t = read_safetensors(CASES / "stream_pro.safetensors")
    schedule = timesteps(4, 5.0)
    x = renoise(t["c1_step3_latent_in"], t["c1_step3_v"], schedule[3:4], schedule[4:5], t["c1_step3_eps"])
    x[:, : t["c1_motion_latents_in"].shape[1]] = t["c1_motion_latents_in"]
    assert torch.equal(x, t["c1_x0"])


def test_colour_correction_and_truncation_give_the_references_first_frames() -> None:
    t = read_safetensors(CASES / "stream_pro.safetensors")
    motion_frames = t["c0_video_float"].shape[1] - t["frames_u8"].shape[0] // 3
    frames = to_uint8(correct_colors(t["c0_video_float"][None], t["cond_image"], 1.0))[motion_frames:]
    golden = t["frames_u8"][: frames.shape[0]]
    assert (frames.int() - golden.int()).abs().max() <= 1 and (frames != golden).float().mean() <= 1e-3
    assert torch.equal(correct_colors(t["c0_video_float"][None], t["cond_image"], 0.0), t["c0_video_float"][None])
