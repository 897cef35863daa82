"""3D rotary position embedding over (time, height, width).

The head dimension is split in three parts, one per axis (Wan-style split:
height and width get 2*(d//6) each, time the rest). Positions are passed in
explicitly, so tokens that are not on the video grid (reference tokens,
global tokens) can sit at any chosen index.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn


def rope_split(head_dim: int) -> tuple[int, int, int]:
    """Dims given to (time, height, width); each even, summing to head_dim."""
    if head_dim % 2 or head_dim < 6:
        raise ValueError(f"3D RoPE needs an even head dim >= 6, got {head_dim}")
    hw = 2 * (head_dim // 6)
    return head_dim - 2 * hw, hw, hw


def grid_positions(frames: int, height: int, width: int, *, time_offset: float = 0.0, device: torch.device | None = None) -> Tensor:
    """Positions [frames*height*width, 3] in (t, h, w) raster order of a token grid."""
    t = torch.arange(frames, device=device, dtype=torch.float32) + time_offset
    h = torch.arange(height, device=device, dtype=torch.float32)
    w = torch.arange(width, device=device, dtype=torch.float32)
    grid = torch.meshgrid(t, h, w, indexing="ij")
    return torch.stack(grid, dim=-1).reshape(-1, 3)


class Rope3D(nn.Module):
    """Turns (t, h, w) positions into the complex rotation table used by `apply_rope`."""

    inv_freq_t: Tensor  # buffers, registered in __init__
    inv_freq_h: Tensor
    inv_freq_w: Tensor

    def __init__(self, head_dim: int, theta: float = 10000.0) -> None:
        super().__init__()
        self.head_dim = head_dim
        for axis, dim in zip("thw", rope_split(head_dim)):
            inv_freq = theta ** (-torch.arange(0, dim, 2, dtype=torch.float32) / dim)
            self.register_buffer(f"inv_freq_{axis}", inv_freq, persistent=False)

    def forward(self, positions: Tensor) -> Tensor:
        """positions [N, 3] -> complex64 table [N, head_dim // 2] (unit-modulus rotations)."""
        if positions.ndim != 2 or positions.shape[-1] != 3:
            raise ValueError(f"positions must be [N, 3], got {tuple(positions.shape)}")
        pos = positions.float()
        angles = torch.cat([pos[:, 0:1] * self.inv_freq_t.float(), pos[:, 1:2] * self.inv_freq_h.float(), pos[:, 2:3] * self.inv_freq_w.float()], dim=-1)
        return torch.polar(torch.ones_like(angles), angles)


def apply_rope(x: Tensor, rope: Tensor) -> Tensor:
    """Rotates consecutive pairs of x [B, N, heads, head_dim] by the table [N, head_dim // 2].

    Computed in float32 (rotations in bf16 would lose relative-position precision)."""
    pairs = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
    return torch.view_as_real(pairs * rope.unsqueeze(-2)).flatten(-2).to(x.dtype)
