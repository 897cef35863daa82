"""SR trainer: one step from a base latent (plus the full-resolution reference) to the full-resolution latent.

The base latents are noised a little because at inference they come from the
A2V sampler, not from the encoder. The model's own t_start re-noising and
per-frame noise are used unchanged, so training matches `stages/demo/super_resolution.py`.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

from avatarstream.models.demo import SRDiT
from avatarstream.training.latents import LatentSet
from avatarstream.training.losses import weighted_error
from avatarstream.training.schedule import optimizer, step

LOW_NOISE = 0.15


def sr_loss(sr: SRDiT, data: LatentSet, batch: int, generator: torch.Generator) -> Tensor:
    device = next(sr.parameters()).device
    index = torch.randint(len(data.sr_low), (batch,), generator=generator)
    low = data.sr_low[index].float()
    low = low + torch.rand(batch, 1, 1, 1, generator=generator) * LOW_NOISE * torch.randn(low.shape, generator=generator)
    high = data.sr_high[index].float()
    reference = data.reference_full[data.sr_clip[index]].float()
    noise = torch.randn(high.shape, generator=generator)[:, :, None]
    low, high, reference, noise = (x.to(device) for x in (low, high, reference, noise))
    out = sr(low[:, :, None], reference, noise)[:, :, 0]
    return weighted_error(out, high)


def train_sr(
    sr: SRDiT, data: LatentSet, steps: int, seed: int, *, batch: int = 32, lr: float = 1e-3, log: Callable[[int, dict[str, float]], None] | None = None
) -> dict[str, float]:
    sr.train().requires_grad_(True)
    params = list(sr.parameters())
    opt, sched = optimizer(params, lr, steps)
    generator = torch.Generator().manual_seed(seed)
    recent: list[float] = []
    for i in range(steps):
        loss = sr_loss(sr, data, batch, generator)
        step(opt, sched, loss, params)
        recent = (recent + [loss.item()])[-50:]
        if log is not None:
            log(i, {"loss": sum(recent) / len(recent)})
    sr.eval().requires_grad_(False)
    return {"loss": sum(recent) / len(recent)}
