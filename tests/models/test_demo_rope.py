import torch

from avatarstream.models.demo import Rope3D, apply_rope, grid_positions
from avatarstream.models.demo.rope import rope_split


def test_split_covers_head_dim_in_even_parts() -> None:
    for head_dim in (6, 16, 32, 64):
        parts = rope_split(head_dim)
        assert sum(parts) == head_dim and all(p % 2 == 0 and p > 0 for p in parts)


def test_grid_positions_raster_order() -> None:
    pos = grid_positions(2, 3, 4, time_offset=5.0)
    assert pos.shape == (24, 3)
    assert pos[0].tolist() == [5.0, 0.0, 0.0]
    assert pos[1].tolist() == [5.0, 0.0, 1.0]
    assert pos[-1].tolist() == [6.0, 2.0, 3.0]


def test_shapes_and_norm_preserved() -> None:
    rope = Rope3D(32)
    table = rope(grid_positions(2, 4, 4))
    assert table.shape == (32, 16)
    x = torch.randn(3, 32, 4, 32)  # [B, N, heads, head_dim]
    y = apply_rope(x, table)
    assert y.shape == x.shape
    torch.testing.assert_close(y.norm(dim=-1), x.norm(dim=-1))


def test_scores_depend_only_on_relative_position() -> None:
    rope = Rope3D(24)
    q, k = torch.randn(1, 2, 1, 24), torch.randn(1, 2, 1, 24)
    pos = torch.tensor([[0.0, 1.0, 2.0], [3.0, 0.0, 5.0]])
    shifted = pos + torch.tensor([-1.0, 7.0, 2.5])

    def score(p: torch.Tensor) -> torch.Tensor:
        table = rope(p)
        return (apply_rope(q, table)[0, 0] * apply_rope(k, table)[0, 1]).sum()

    torch.testing.assert_close(score(shifted), score(pos), atol=1e-4, rtol=1e-4)
    moved = pos.clone()
    moved[1, 1] += 1.0  # changing the offset along one axis changes the score
    assert (score(moved) - score(pos)).abs() > 1e-4
