"""3-axis rotary positions of the S2V DiT, computed from the positions themselves: no table, so no end of table.

The reference indexes a 45,000-row table (about 2 hours of latent frames) and
stops there. Here each token's angle is ``position * inverse frequency`` in
float64, which is what the table holds for positions inside it, bit for bit,
and stays exact far beyond it. As in the reference, cos and sin are rounded to
float16 (its table is complex32) before they rotate queries and keys; a
negative temporal position (the motion frames, which lie in the past) uses the
conjugate of the positive one.

The head dimension ``d`` splits into (time, height, width) parts of
``d - 4 * (d // 6)``, ``2 * (d // 6)`` and ``2 * (d // 6)`` channels.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from avatarstream.models.liveavatar.config import FRAMEPACK_BUCKETS, SINK_REF_POSITION


def axis_dims(head_dim: int) -> tuple[int, int, int]:
    third = 2 * (head_dim // 6)
    return head_dim - 2 * third, third, third


@dataclass(frozen=True)
class Positions:
    """Integer (t, h, w) positions of a token sequence, one row per token."""

    t: torch.Tensor
    h: torch.Tensor
    w: torch.Tensor

    @staticmethod
    def cat(parts: list[Positions]) -> Positions:
        return Positions(torch.cat([p.t for p in parts]), torch.cat([p.h for p in parts]), torch.cat([p.w for p in parts]))

    def shifted(self, frames: int) -> Positions:
        return Positions(self.t + frames, self.h, self.w)

    def __len__(self) -> int:
        return int(self.t.shape[0])


def grid(t: list[int], h: list[int], w: list[int]) -> Positions:
    """Every (t, h, w) of the given per-axis positions, t-major as tokens are flattened."""
    tt, hh, ww = torch.meshgrid(torch.tensor(t), torch.tensor(h), torch.tensor(w), indexing="ij")
    return Positions(tt.reshape(-1), hh.reshape(-1), ww.reshape(-1))


def _spread(first: int, last: int, count: int) -> list[int]:
    """``count`` integer positions from ``first`` to ``last`` as the reference samples them (linspace, truncated)."""
    return [int(v) for v in np.linspace(first, last, count).astype(int)]


def block_positions(first_frame: int, frames: int, height: int, width: int) -> Positions:
    """The noisy tokens of a block: frames ``first_frame..``, every height and width position (token grid)."""
    return grid(list(range(first_frame, first_frame + frames)), list(range(height)), list(range(width)))


def reference_positions(height: int, width: int, rollout: int = 0) -> Positions:
    """The sink's reference frame, at temporal position 30 (+ ``rollout``)."""
    return grid([SINK_REF_POSITION + rollout], list(range(height)), list(range(width)))


def motion_positions(height: int, width: int, buckets: tuple[int, ...] = FRAMEPACK_BUCKETS) -> Positions:
    """FramePack's motion tokens, nearest bucket first; bucket k is compressed 2**k in every axis and lies in the past.

    Bucket k covers the frames ending where bucket k-1 starts; its tokens sit at
    evenly spread positions of the full token grid (``height`` x ``width``).
    """
    parts, end = [], 0
    for k, frames in enumerate(buckets):
        start = end - frames
        scale = 2**k
        t = [-v for v in _spread(-start, -start - frames + 1, frames // scale)]
        parts.append(grid(t, _spread(0, height - 1, height // scale), _spread(0, width - 1, width // scale)))
        end = start
    return Positions.cat(parts)


def _angles(positions: torch.Tensor, dim: int, theta: float) -> tuple[torch.Tensor, torch.Tensor]:
    inv = 1.0 / torch.pow(theta, torch.arange(0, dim, 2, dtype=torch.float64) / dim)
    angle = torch.outer(positions.abs().to(torch.float64), inv)
    sign = torch.where(positions < 0, -1.0, 1.0).to(torch.float64)[:, None]
    return torch.cos(angle), torch.sin(angle) * sign


def rope_cos_sin(positions: Positions, head_dim: int, theta: float, device: torch.device | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """cos, sin [tokens, head_dim / 2], float16-rounded values held as float32."""
    parts = [_angles(p, d, theta) for p, d in zip((positions.t, positions.h, positions.w), axis_dims(head_dim), strict=True)]
    cos = torch.cat([c for c, _ in parts], dim=1).to(torch.float16).float()
    sin = torch.cat([s for _, s in parts], dim=1).to(torch.float16).float()
    return cos.to(device), sin.to(device)


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotate channel pairs of ``x`` [B, L, heads, head_dim] by the angles of its L tokens (float32 math)."""
    pairs = x.float().unflatten(-1, (-1, 2))
    re, im = pairs[..., 0], pairs[..., 1]
    c, s = cos[None, :, None], sin[None, :, None]
    return torch.stack([re * c - im * s, re * s + im * c], dim=-1).flatten(-2).to(x.dtype)
