"""FlashVSR's RoPE: the reference's table values below 1024 positions, and no limit above (a call at latent frame 5000)."""

from __future__ import annotations

import math
from pathlib import Path

import torch

from avatarstream.families.flashvsr.layout import resolve
from avatarstream.families.flashvsr.load import load_dit
from avatarstream.models.flashvsr.dit import KVCache, Sparsity
from avatarstream.models.flashvsr.rope import axis_dims, axis_rotations, grid_rotations

GOLDEN = Path(__file__).parents[1] / "fixtures" / "flashvsr-tiny"
TABLE = 1024  # positions in the reference's table


def test_rotations_computed_per_position_equal_a_table_of_1024_bit_for_bit() -> None:
    for dim in axis_dims(128):
        table = axis_rotations(dim, torch.arange(TABLE))
        for position in (0, 1, 9, 511, 1023):
            assert torch.equal(axis_rotations(dim, torch.tensor([position]))[0], table[position])


def test_a_rotation_is_the_unit_complex_number_at_position_times_frequency() -> None:
    dim = 44  # the time axis of a 128-wide head
    for position in (7, 1023, 5000, 10**6):
        rotation = axis_rotations(dim, torch.tensor([position]))[0]
        for i in range(dim // 2):
            angle = position * 10000.0 ** (-2 * i / dim)
            assert abs(rotation[i].item() - complex(math.cos(angle), math.sin(angle))) < 1e-9


def test_the_grid_puts_time_rows_and_columns_in_their_channels() -> None:
    rotations = grid_rotations(128, 5000, 2, 3, 4, torch.device("cpu"))
    t, h, w = axis_dims(128)
    assert rotations.shape == (2 * 3 * 4, 1, 64)
    assert torch.equal(rotations[13, 0, : t // 2], axis_rotations(t, torch.tensor([5001]))[0])  # token 13 = frame 1, row 0, column 1
    assert torch.equal(rotations[13, 0, t // 2 : (t + h) // 2], axis_rotations(h, torch.tensor([0]))[0])
    assert torch.equal(rotations[13, 0, (t + h) // 2 :], axis_rotations(w, torch.tensor([1]))[0])


def test_a_call_past_the_reference_table_runs() -> None:
    layout = resolve(GOLDEN / "weights" / "FlashVSR")
    dit = load_dit(layout.dit, layout.config, torch.float32)
    step, context = dit.timestep(1000.0, torch.float32, torch.device("cpu")), torch.randn(1, 8, dit.config.text_dim)
    cache = KVCache.empty(dit.config.num_layers)
    with torch.inference_mode():
        for first, frames in ((4996, 6), (5002, 2)):
            v = dit(torch.randn(1, 16, frames, 16, 16), step, dit.cross_kv(context), [], cache, first, Sparsity(11, 120.0, 3))
            assert v.shape == (1, 16, frames, 16, 16) and torch.isfinite(v).all()
