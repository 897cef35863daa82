"""3-D rotary position embedding of the FlashHead DiT, in float64 complex arithmetic as the reference computes it.

A head's rotation pairs are split between time, height and width (the time
share takes what the other two leave); positions restart at 0 every chunk, so
the table never grows with the stream.
"""

from __future__ import annotations

import torch

THETA = 10000.0


def _frequencies(pairs: int, positions: int, device: torch.device) -> torch.Tensor:
    """[positions, pairs] unit complex numbers (complex128): position p turned by p / theta^(2i / (2 pairs))."""
    dim = 2 * pairs
    inverse = 1.0 / (THETA ** (torch.arange(0, dim, 2, device=device)[:pairs].double() / dim))
    angles = torch.outer(torch.arange(positions, device=device).double(), inverse)
    return torch.polar(torch.ones_like(angles), angles)


def grid_frequencies(head_dim: int, grid: tuple[int, int, int], device: torch.device) -> torch.Tensor:
    """[f h w, 1, head_dim / 2] rotations of every token of a (frames, height, width) grid."""
    pairs = head_dim // 2
    spatial = pairs // 3
    f, h, w = grid
    parts = (_frequencies(pairs - 2 * spatial, f, device), _frequencies(spatial, h, device), _frequencies(spatial, w, device))
    table = torch.cat(
        [
            parts[0].view(f, 1, 1, -1).expand(f, h, w, -1),
            parts[1].view(1, h, 1, -1).expand(f, h, w, -1),
            parts[2].view(1, 1, w, -1).expand(f, h, w, -1),
        ],
        dim=-1,
    )
    return table.reshape(f * h * w, 1, -1)


def apply_rope(x: torch.Tensor, freqs: torch.Tensor) -> torch.Tensor:
    """``x`` [B, L, heads, head_dim] rotated by ``freqs`` [L, 1, head_dim / 2], in float64, back in ``x``'s dtype."""
    b, length, heads, _ = x.shape
    pairs = torch.view_as_complex(x.to(torch.float64).reshape(b, length, heads, -1, 2))
    return torch.view_as_real(pairs * freqs).flatten(3).to(x.dtype)
