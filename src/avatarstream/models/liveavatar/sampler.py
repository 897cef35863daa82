"""LiveAvatar's distilled sampler: 4 plain Euler steps of diffusers' shifted flow-matching schedule, no guidance.

Step i of every block runs against KV cache i ("timestep forcing"): the cache
only ever sees step-i inputs, so a block needs no clean re-encoding pass.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
from diffusers import FlowMatchEulerDiscreteScheduler

from avatarstream.models.liveavatar.caches import SinkCache, StepCache
from avatarstream.models.liveavatar.dit import S2VDiT

#: Runs a block's steps: (input, steps, step) -> output; every step in turn (``every_step``), or a rank's share of them.
StepRunner = Callable[[torch.Tensor, int, Callable[[int, torch.Tensor], torch.Tensor]], torch.Tensor]


def every_step(x: torch.Tensor, steps: int, step: Callable[[int, torch.Tensor], torch.Tensor]) -> torch.Tensor:
    """All of a block's steps, here, in order."""
    for i in range(steps):
        x = step(i, x)
    return x


@dataclass(frozen=True)
class Schedule:
    timesteps: torch.Tensor  # [steps] model timesteps (0..1000)
    sigmas: torch.Tensor  # [steps + 1], the last 0

    @classmethod
    def make(cls, steps: int, shift: float, num_train_timesteps: int = 1000) -> Schedule:
        scheduler = FlowMatchEulerDiscreteScheduler(num_train_timesteps=num_train_timesteps, shift=shift)
        scheduler.set_timesteps(steps, device="cpu")  # type: ignore[attr-defined]  # diffusers' scheduler classes are untyped
        return cls(scheduler.timesteps.float(), scheduler.sigmas.float())  # type: ignore[attr-defined]

    @property
    def steps(self) -> int:
        return int(self.timesteps.shape[0])


def euler_step(x: torch.Tensor, velocity: torch.Tensor, sigma: torch.Tensor, sigma_next: torch.Tensor) -> torch.Tensor:
    """x + (sigma_next - sigma) * v, in float32 (velocity is noise minus data)."""
    return (x.float() + (sigma_next - sigma).to(x.device) * velocity.float()).to(x.dtype)


#: Called after every model call with (step, model input, velocity).
StepHook = Callable[[int, torch.Tensor, torch.Tensor], None]


def denoise_block(
    dit: S2VDiT,
    noise: torch.Tensor,
    schedule: Schedule,
    context: torch.Tensor,
    audio: torch.Tensor,
    caches: Sequence[StepCache],
    sink: SinkCache,
    first_frame: int,
    sink_offsets: Sequence[int],
    on_step: StepHook | None = None,
    run_steps: StepRunner = every_step,
) -> torch.Tensor:
    """One block from ``noise`` [B, C, F, h, w] to clean latents; step i uses ``caches[i]`` and ``sink_offsets[i]``.

    ``run_steps`` runs the steps: all here, or (``--parallel steps=N``) this rank's one, between the ranks of its neighbours;
    the result is then this rank's step's output (clean latents on the last step's rank only)."""
    frames = noise.shape[2]

    def step(i: int, x: torch.Tensor) -> torch.Tensor:
        t = schedule.timesteps[i].expand(frames)
        velocity = dit(x, t, context, audio, caches[i], sink, first_frame, sink_offsets[i])
        if on_step is not None:
            on_step(i, x, velocity)
        return euler_step(x, velocity, schedule.sigmas[i], schedule.sigmas[i + 1])

    return run_steps(noise, schedule.steps, step)
