"""FlashHead's distilled sampler: a few re-noising steps on a fixed timestep table, no guidance.

Each step predicts the clean latent from the velocity, ``x0 = x - v t``, then
re-noises it to the next timestep with fresh noise, ``x = (1 - t') x0 + t' eps``
(the last step, t' = 0, still draws its eps, so the draw order per chunk is
noise, eps_0 .. eps_{n-1}). The first latent frames are overwritten with the
motion latents before every step and after the last. Timesteps are shifted,
t -> s t / (1 + (s - 1) t), in float32 as the reference does.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from avatarstream.models.flashhead.dit import FlashHeadDiT

NUM_TIMESTEPS = 1000
#: The reference's tables for its distilled step counts; any other count is a linspace from 1000 to 1.
TABLES = {2: (1000.0, 500.0), 4: (1000.0, 750.0, 500.0, 250.0)}

#: Draws one noise tensor of the given shape (the session's generator, in the reference's order).
Draw = Callable[[tuple[int, ...]], torch.Tensor]
#: Called after every model call with (step, model input, velocity, eps drawn for the update).
StepHook = Callable[[int, torch.Tensor, torch.Tensor, torch.Tensor], None]


def timesteps(steps: int, shift: float) -> torch.Tensor:
    """[steps + 1] float32 timesteps in 0..1000, shifted, ending with 0."""
    if steps < 1:
        raise ValueError(f"steps must be 1 or more, got {steps}")
    table = TABLES.get(steps) or tuple(torch.linspace(NUM_TIMESTEPS, 1, steps, dtype=torch.float64).float().tolist())
    t = torch.tensor([*table, 0.0], dtype=torch.float32) / NUM_TIMESTEPS
    return shift * t / (1 + (shift - 1) * t) * NUM_TIMESTEPS


def renoise(x: torch.Tensor, velocity: torch.Tensor, t: torch.Tensor, t_next: torch.Tensor, eps: torch.Tensor) -> torch.Tensor:
    """One update: the clean prediction at ``t``, noised again to ``t_next`` with ``eps`` (timesteps in 0..1000)."""
    t, t_next = (t / NUM_TIMESTEPS).to(x.dtype), (t_next / NUM_TIMESTEPS).to(x.dtype)
    return (1 - t_next) * (x - velocity * t) + t_next * eps


def denoise(
    dit: FlashHeadDiT,
    noise: torch.Tensor,
    motion: torch.Tensor,
    reference: torch.Tensor,
    audio: torch.Tensor,
    schedule: torch.Tensor,
    draw: Draw,
    on_step: StepHook | None = None,
) -> torch.Tensor:
    """Clean latents [C, T, h, w] from ``noise`` (same shape), with the first frames held to ``motion`` [C, n, h, w].

    ``reference`` is the DiT's ``y`` [C', T, h, w]; ``audio`` its windows [1, frames, 5, L, C]; ``schedule`` from ``timesteps``.
    """
    x, held = noise.clone(), motion.shape[1]
    for i in range(schedule.shape[0] - 1):
        x[:, :held] = motion
        t = schedule[i : i + 1].to(x.device)
        velocity = dit(x[None], t, audio, reference[None])[0].to(x.dtype)
        eps = draw(tuple(x.shape))
        if on_step is not None:
            on_step(i, x, velocity, eps)
        x = renoise(x, velocity, t, schedule[i + 1 : i + 2].to(x.device), eps)
    x[:, :held] = motion
    return x
