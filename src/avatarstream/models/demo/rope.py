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


def grid_positions(frames: int, height: int, width: int, *, time_offset: float = 0.0,
                   device: torch.device | None = None) -> Tensor:
    """Positions [frames*height*width, 3] in (t, h, w) raster order of a token grid."""
    t = torch.arange(frames, device=device, dtype=torch.float32) + time_offset
    h = torch.arange(height, device=device, dtype=torch.float32)
    w = torch.arange(width, device=device, dtype=torch.float32)
    grid = torch.meshgrid(t, h, w, indexing="ij")
    return torch.stack(grid, dim=-1).reshape(-1, 3)


class Rope3D(nn.Module):
    """Turns (t, h, w) positions into the cos/sin tables used by `apply_rope`."""

    def __init__(self, head_dim: int, theta: float = 10000.0) -> None:
        super().__init__()
        self.head_dim = head_dim
        for axis, dim in zip("thw", rope_split(head_dim)):
            inv_freq = theta ** (-torch.arange(0, dim, 2, dtype=torch.float32) / dim)
            self.register_buffer(f"inv_freq_{axis}", inv_freq, persistent=False)

    def forward(self, positions: Tensor) -> tuple[Tensor, Tensor]:
        """positions [N, 3] -> (cos, sin), each [N, head_dim // 2], float32."""
        if positions.ndim != 2 or positions.shape[-1] != 3:
            raise ValueError(f"positions must be [N, 3], got {tuple(positions.shape)}")
        pos = positions.float()
        angles = torch.cat([pos[:, 0:1] * self.inv_freq_t.float(),
                            pos[:, 1:2] * self.inv_freq_h.float(),
                            pos[:, 2:3] * self.inv_freq_w.float()], dim=-1)
        return angles.cos(), angles.sin()


def apply_rope(x: Tensor, rope: tuple[Tensor, Tensor]) -> Tensor:
    """Rotates x [..., N, head_dim] by the tables from `Rope3D` (rotate-half form)."""
    cos, sin = (r.to(x.dtype) for r in rope)
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1)
