"""Colour correction: the torch conversions are scikit-image's (what the reference calls), and the transfer is per frame."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from avatarstream.components.wan.color_match import lab_to_rgb, match_colors, rgb_to_lab

color = pytest.importorskip("skimage.color")


def test_conversions_match_scikit_image() -> None:
    rgb = np.random.default_rng(0).random((16, 24, 3)).astype(np.float32)
    rgb[0, :4] = [[0, 0, 0], [1, 1, 1], [0.04045, 0.5, 0.002], [1, 0, 0]]  # both sides of each threshold
    lab = color.rgb2lab(rgb)
    np.testing.assert_allclose(rgb_to_lab(torch.from_numpy(rgb)).numpy(), lab, atol=2e-4)
    out_of_gamut = lab * np.float32(1.6)  # values past [0, 1] on the way back,
    out_of_gamut[1, :, 2] = 250  # and a negative Z
    with pytest.warns(UserWarning):
        expected = color.lab2rgb(out_of_gamut)
    np.testing.assert_allclose(lab_to_rgb(torch.from_numpy(out_of_gamut)).numpy(), expected, atol=2e-5)


def test_transfer_is_per_frame_and_moves_the_statistics_to_the_reference() -> None:
    video = torch.rand(1, 3, 5, 16, 24) * 0.6 - 0.8  # dark
    reference = torch.rand(1, 3, 1, 20, 12) * 0.5 + 0.3  # bright
    corrected = match_colors(video, reference, 1.0)
    torch.testing.assert_close(corrected[:, :, 3:], match_colors(video[:, :, 3:], reference, 1.0))
    lab = rgb_to_lab((corrected[0, :, 0].permute(1, 2, 0) + 1) / 2)
    target = rgb_to_lab((reference[0, :, 0].permute(1, 2, 0) + 1) / 2)
    torch.testing.assert_close(lab.mean(dim=(0, 1)), target.mean(dim=(0, 1)), atol=0.5, rtol=0)
    half = match_colors(video, reference, 0.5)
    torch.testing.assert_close(half, (video + corrected) / 2, atol=1e-5, rtol=0)
    assert match_colors(video, reference, 0.0) is video
