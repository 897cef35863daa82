"""The architecture's flow-matching sampler: shifted schedule, text + audio guidance, Euler steps, motion frames.

Velocity is noise minus data; the ODE runs from t = 1000 (noise) to 0. Before
every model call and after every update the first latent frames are reset to
the clean motion latents the chunk is conditioned on.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch


def timesteps(steps: int, shift: float, num_train_timesteps: int = 1000) -> torch.Tensor:
    """[steps + 1] float32: ``shift``-warped linspace(1000, 1) followed by a final 0."""
    if steps < 1:
        raise ValueError(f"steps must be at least 1, got {steps}")
    if shift <= 0:
        raise ValueError(f"shift must be positive, got {shift}")
    s = torch.linspace(num_train_timesteps, 1, steps, dtype=torch.float64) / num_train_timesteps
    warped = shift * s / (1 + (shift - 1) * s) * num_train_timesteps
    return torch.cat([warped, torch.zeros(1, dtype=torch.float64)]).float()


@dataclass(frozen=True)
class Guidance:
    """Text and audio guidance scales; which predictions a step needs follows from them."""

    text_scale: float = 5.0
    audio_scale: float = 4.0

    @property
    def predictions(self) -> tuple[tuple[bool, bool], ...]:
        """(with text, with audio) for each model call of a step, in the order ``combine`` takes them."""
        if self.text_scale == 1.0 and self.audio_scale == 1.0:
            return ((True, True),)
        if self.text_scale == 1.0:
            return ((True, True), (True, False))
        return ((True, True), (False, True), (False, False))

    def combine(self, velocities: list[torch.Tensor]) -> torch.Tensor:
        """The guided velocity from the predictions listed by ``predictions``."""
        if len(velocities) == 1:
            return velocities[0]
        if len(velocities) == 2:
            cond, drop_audio = velocities
            return drop_audio + self.audio_scale * (cond - drop_audio)
        cond, drop_text, uncond = velocities
        return uncond + self.text_scale * (cond - drop_text) + self.audio_scale * (drop_text - uncond)


def euler_step(latent: torch.Tensor, velocity: torch.Tensor, t: torch.Tensor, t_next: torch.Tensor) -> torch.Tensor:
    return latent - velocity * ((t - t_next) / 1000)


def fix_motion(latent: torch.Tensor, motion: torch.Tensor, positions: Sequence[int] | None = None) -> torch.Tensor:
    """Latent [B, C, T, H, W] with the frames at ``positions`` (default: the first ones) replaced by clean latents."""
    if positions is None:
        return torch.cat([motion.to(latent.dtype), latent[:, :, motion.shape[2] :]], dim=2)
    fixed = latent.clone()
    fixed[:, :, list(positions)] = motion.to(latent.dtype)
    return fixed


#: (latent, timestep [1], conditions) -> one velocity per (with text, with audio) condition.
Predict = Callable[[torch.Tensor, torch.Tensor, tuple[tuple[bool, bool], ...]], list[torch.Tensor]]


def sample(
    predict: Predict,
    noise: torch.Tensor,
    motion: torch.Tensor,
    schedule: torch.Tensor,
    guidance: Guidance,
    positions: Sequence[int] | None = None,
) -> torch.Tensor:
    """Integrate one chunk from ``noise``; ``predict(latent, t, conditions)`` returns one velocity per condition.

    The clean ``motion`` latents sit at ``positions`` (default: the first
    frames) before every model call and after every update.
    """
    latent = fix_motion(noise, motion, positions)
    for i in range(len(schedule) - 1):
        velocity = guidance.combine(predict(latent, schedule[i : i + 1], guidance.predictions))
        latent = fix_motion(euler_step(latent, velocity, schedule[i], schedule[i + 1]), motion, positions)
    return latent
