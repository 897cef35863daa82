"""A few optimiser steps on one tiny fixed batch lower each trainer's loss."""

from __future__ import annotations

import torch

from avatarstream.models.demo import A2VDiT, AudioEncoder, CausalVAE, DemoConfig, ReferenceEncoder, SRDiT, TextEncoder
from avatarstream.training.a2v import flow_loss, sample_chunks
from avatarstream.training.a2v_parts import A2VModels, ChunkGeometry
from avatarstream.training.data import frame_batches
from avatarstream.training.latents import LatentSet
from avatarstream.training.schedule import optimizer, step
from avatarstream.training.sr import sr_loss
from avatarstream.training.vae import vae_loss


def descend(loss_fn, params, steps: int, lr: float) -> tuple[float, float]:
    """(first loss, last loss) over `steps` steps where loss_fn always sees the same data and noise."""
    opt, sched = optimizer(params, lr, steps, warmup=1)
    losses = []
    for _ in range(steps):
        loss = loss_fn()
        losses.append(loss.item())
        step(opt, sched, loss, params)
    return losses[0], losses[-1]


def synthetic_latents(cfg: DemoConfig, clips: int = 2, frames: int = 20) -> LatentSet:
    g = torch.Generator().manual_seed(0)
    c, h = cfg.vae.latent_channels, cfg.base_latent_size
    base = [torch.randn(c, frames, h, h, generator=g).half() for _ in range(clips)]
    audio = [torch.randn(frames * cfg.samples_per_frame, generator=g) * 0.1 for _ in range(clips)]
    return LatentSet(
        base,
        audio,
        [torch.zeros(frames)] * clips,
        torch.randn(clips, c, h, h, generator=g),
        torch.randn(clips, c, 2 * h, 2 * h, generator=g),
        torch.randn(4, c, h, h, generator=g).half(),
        torch.randn(4, c, 2 * h, 2 * h, generator=g).half(),
        torch.tensor([0, 0, 1, 1]),
    )


def test_vae_steps_reduce_reconstruction_loss() -> None:
    torch.manual_seed(0)
    vae = CausalVAE(DemoConfig())
    video = next(frame_batches(seed=0, frames=2, batch=1, workers=0))
    first, last = descend(lambda: vae_loss(vae, video, 128, torch.Generator().manual_seed(0))[0], list(vae.parameters()), 8, 2e-3)
    assert last < 0.8 * first


def test_a2v_steps_reduce_flow_loss() -> None:
    cfg = DemoConfig.tiny()
    torch.manual_seed(0)
    models = A2VModels(A2VDiT(cfg), AudioEncoder(cfg), ReferenceEncoder(cfg))
    text_encoder = TextEncoder(cfg)
    with torch.no_grad():
        text = text_encoder(text_encoder.tokenize(""))
    data = synthetic_latents(cfg)
    geometry = ChunkGeometry()
    context = (models.audio_encoder.frames_before, models.audio_encoder.frames_after)
    chunk = sample_chunks(data, "N", 2, geometry, context, cfg.samples_per_frame, torch.Generator().manual_seed(0))
    loss = lambda: flow_loss(models, chunk, text, geometry.cond_noise, 3.0, torch.Generator().manual_seed(1))
    first, last = descend(loss, list(models.parameters()), 12, 3e-3)
    assert last < 0.8 * first


def test_sr_steps_reduce_loss() -> None:
    cfg = DemoConfig.tiny()
    torch.manual_seed(0)
    sr = SRDiT(cfg)
    data = synthetic_latents(cfg)
    first, last = descend(lambda: sr_loss(sr, data, 4, torch.Generator().manual_seed(0)), list(sr.parameters()), 12, 3e-3)
    assert last < 0.8 * first
