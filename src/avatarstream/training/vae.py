"""VAE trainer: reconstruct rendered frames at output and base resolution.

Latents are kept near zero mean / unit variance per channel (the flow models
start from unit Gaussian noise) and the decoder learns on slightly noisy
latents, because at inference it decodes SR outputs, not encoder outputs.
Short consecutive sequences train the decoder's causal temporal blocks.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import torch
from torch import Tensor

from avatarstream.models.demo import CausalVAE
from avatarstream.training.data import downsample
from avatarstream.training.losses import weighted_error
from avatarstream.training.schedule import optimizer, step

LATENT_NOISE = 0.1
REGULARISATION = 0.1


def latent_regulariser(z: Tensor) -> Tensor:
    """Pulls each channel of z [B, C, T, h, w] to mean 0 and std 1 over the batch."""
    per_channel = z.transpose(0, 1).flatten(1)
    return per_channel.mean(1).square().mean() + (per_channel.std(1) - 1).square().mean()


def vae_loss(vae: CausalVAE, video: Tensor, base_size: int, generator: torch.Generator) -> tuple[Tensor, dict[str, float]]:
    """video [B, T, 3, H, W] in [-1, 1] -> (loss, parts)."""
    device = next(vae.parameters()).device
    video = video.to(device)
    b, t = video.shape[:2]
    frames = video.flatten(0, 1)
    losses = {}
    reg = torch.zeros((), device=device)
    for name, pixels in (("full", frames), ("base", downsample(frames, base_size))):
        clip = pixels.view(b, t, *pixels.shape[1:]).transpose(1, 2)  # [B, 3, T, H, W]
        z = vae.encode(clip)
        noise = torch.randn(z.shape, generator=generator).to(device) * LATENT_NOISE
        recon, _ = vae.decode(z + noise)
        losses[name] = weighted_error(recon, clip, power=1)
        reg = reg + latent_regulariser(z)
    total = losses["full"] + 0.5 * losses["base"] + REGULARISATION * reg
    return total, {"full_l1": losses["full"].item(), "base_l1": losses["base"].item(), "reg": reg.item()}


def decoder_loss(vae: CausalVAE, video: Tensor, generator: torch.Generator) -> tuple[Tensor, dict[str, float]]:
    """Reconstruction through a frozen encoder: sharpens the decoder without moving the latent space."""
    device = next(vae.parameters()).device
    clip = video.to(device).transpose(1, 2)  # [B, 3, T, H, W]
    with torch.no_grad():
        z = vae.encode(clip)
    recon, _ = vae.decode(z + torch.randn(z.shape, generator=generator).to(device) * LATENT_NOISE)
    loss = weighted_error(recon, clip, power=1)
    return loss, {"full_l1": loss.item()}


def train_vae(
    vae: CausalVAE,
    batches: Iterator[Tensor],
    steps: int,
    base_size: int,
    seed: int,
    lr: float = 1e-3,
    decoder_only: bool = False,
    log: Callable[[int, dict[str, float]], None] | None = None,
) -> dict[str, float]:
    """The whole VAE, or (decoder_only) the decoder alone once A2V and SR depend on the encoder's latents."""
    vae.train().requires_grad_(True)
    params = list((vae.decoder if decoder_only else vae).parameters())
    opt, sched = optimizer(params, lr, steps)
    generator = torch.Generator().manual_seed(seed)
    parts: dict[str, float] = {}
    for i in range(steps):
        video = next(batches)
        loss, parts = decoder_loss(vae, video, generator) if decoder_only else vae_loss(vae, video, base_size, generator)
        step(opt, sched, loss, params)
        if log is not None:
            log(i, parts)
    vae.eval().requires_grad_(False)
    return parts
