"""Euler sampler for rectified-flow / flow-matching models.

Convention: x_t = (1 - t) * x0 + t * noise, velocity v = noise - x0, and
sampling integrates t from 1 (pure noise) to 0 (data).
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor


class FlowMatchEuler:
    def __init__(self, num_steps: int, shift: float = 1.0) -> None:
        if not isinstance(num_steps, int) or num_steps < 1:
            raise ValueError(f"num_steps must be an integer >= 1, got {num_steps!r}")
        if not shift > 0:
            raise ValueError(f"shift must be > 0, got {shift!r}")
        self.num_steps = num_steps
        self.shift = float(shift)

    def timesteps(self, device: torch.device | None = None) -> Tensor:
        """[num_steps + 1] float32 from 1 to 0; shift > 1 spends more steps at high noise."""
        t = torch.linspace(1.0, 0.0, self.num_steps + 1, dtype=torch.float64)
        t = self.shift * t / (1.0 + (self.shift - 1.0) * t)
        return t.to(device=device, dtype=torch.float32)

    def sample(self, velocity_fn: Callable[[Tensor, Tensor], Tensor], noise: Tensor) -> Tensor:
        """Integrates from `noise` (t = 1) to t = 0; velocity_fn(x, t [B]) returns v like x."""
        steps = self.timesteps().tolist()
        x = noise
        for i in range(self.num_steps):
            t = torch.full((noise.shape[0],), steps[i], dtype=torch.float32, device=noise.device)  # filled there: no copy to wait for
            v = velocity_fn(x, t)
            x = x + (steps[i + 1] - steps[i]) * v
        return x
