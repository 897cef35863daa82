"""Wan's 3-D rotary embedding, computed for any absolute time position.

The reference looks rotations up in a table of 1024 positions per axis, so a
stream fails once its latent frames pass 1024 (about 4,100 video frames);
here each rotation is computed from its position with the same float64
operations, which gives the table's values below 1024 and has no end.
"""

from __future__ import annotations

import torch

THETA = 10000.0


def axis_dims(head_dim: int) -> tuple[int, int, int]:
    """Channels of a head given to time, rows and columns (time takes what the two thirds leave)."""
    third = head_dim // 3
    return head_dim - 2 * third, third, third


def axis_rotations(dim: int, positions: torch.Tensor) -> torch.Tensor:
    """Unit complex rotations [len(positions), dim // 2] (complex128) of one axis at integer ``positions``."""
    inverse = 1.0 / (THETA ** (torch.arange(0, dim, 2, device=positions.device)[: dim // 2].double() / dim))
    angles = torch.outer(positions.double(), inverse)
    return torch.polar(torch.ones_like(angles), angles)


def grid_rotations(head_dim: int, first_frame: int, frames: int, height: int, width: int, device: torch.device) -> torch.Tensor:
    """Rotations [frames * height * width, 1, head_dim // 2] of a token grid whose first latent frame sits at ``first_frame``."""
    dims = axis_dims(head_dim)
    t = axis_rotations(dims[0], torch.arange(first_frame, first_frame + frames, device=device))
    h = axis_rotations(dims[1], torch.arange(height, device=device))
    w = axis_rotations(dims[2], torch.arange(width, device=device))
    grid = (frames, height, width)
    return torch.cat(
        [t.view(frames, 1, 1, -1).expand(*grid, -1), h.view(1, height, 1, -1).expand(*grid, -1), w.view(1, 1, width, -1).expand(*grid, -1)], dim=-1
    ).reshape(frames * height * width, 1, -1)


def apply_rope(x: torch.Tensor, rotations: torch.Tensor, num_heads: int) -> torch.Tensor:
    """Rotate [B, L, heads * d] by ``rotations`` [L, 1, d / 2], in float64 as the reference does, back in ``x``'s dtype."""
    pairs = x.unflatten(-1, (num_heads, -1, 2)).double()
    return torch.view_as_real(torch.view_as_complex(pairs) * rotations).flatten(2).to(x.dtype)
