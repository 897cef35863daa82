"""Optimiser and learning-rate schedule shared by all trainers (AdamW, warm-up then cosine)."""

from __future__ import annotations

import math
from collections.abc import Iterable

import torch


def optimizer(
    params: Iterable[torch.nn.Parameter], lr: float, steps: int, warmup: int = 100
) -> tuple[torch.optim.Optimizer, torch.optim.lr_scheduler.LambdaLR]:
    opt = torch.optim.AdamW(list(params), lr=lr, betas=(0.9, 0.99), weight_decay=0.01)

    def factor(step: int) -> float:
        if step < warmup:
            return (step + 1) / warmup
        progress = min((step - warmup) / max(steps - warmup, 1), 1.0)
        return 0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * progress))

    return opt, torch.optim.lr_scheduler.LambdaLR(opt, factor)


def step(opt: torch.optim.Optimizer, sched: torch.optim.lr_scheduler.LambdaLR, loss: torch.Tensor, params: list[torch.nn.Parameter], clip: float = 1.0) -> None:
    opt.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(params, clip)
    opt.step()
    sched.step()
