"""The reference's motion context, computed without its cost: 365 copies of the reference image through the causal VAE.

LiveAvatar conditions on "motion latents": the VAE encoding of 73 x 5 video
frames that start as copies of the reference image (later: with the last
decoded frames at the end), and the decoder starts from those latents too.
Encoding or decoding hundreds of identical frames is mostly wasted work: once
the causal VAE's cache repeats itself bit for bit over a constant input, every
further step repeats too. These helpers run step by step, detect that fixed
point exactly (``torch.equal`` on the whole cache) and copy the rest, so the
result is the full computation's, bit for bit, at a fraction of its cost.
"""

from __future__ import annotations

import torch
from diffusers.models.autoencoders.autoencoder_kl_wan import AutoencoderKLWan

from avatarstream.models.infinitetalk.config import VAE_TEMPORAL_STRIDE
from avatarstream.models.infinitetalk.vae import DecoderCache, _causal_convs, _stats, decode
from avatarstream.models.liveavatar.config import MOTION_FRAMES

#: Copies of the reference image the reference encodes for its first motion latents (5 per motion frame).
MOTION_PIXEL_FRAMES = 5 * MOTION_FRAMES


def _same(a: list[torch.Tensor | None], b: list[torch.Tensor | None]) -> bool:
    return len(a) == len(b) and all((x is None and y is None) or (x is not None and y is not None and torch.equal(x, y)) for x, y in zip(a, b, strict=True))


def _snapshot(cache: list[torch.Tensor | None]) -> list[torch.Tensor | None]:
    return [c.clone() if isinstance(c, torch.Tensor) else c for c in cache]


def encode_motion(vae: AutoencoderKLWan, image: torch.Tensor, tail: torch.Tensor | None = None, total: int = MOTION_PIXEL_FRAMES) -> torch.Tensor:
    """Normalised latents of ``total`` frames: copies of ``image`` [B, 3, 1, H, W] followed by ``tail`` [B, 3, T, H, W].

    Equal to encoding the whole stack (first frame alone, then groups of 4).
    """
    tail_frames = 0 if tail is None else tail.shape[2]
    if (total - 1) % VAE_TEMPORAL_STRIDE or tail_frames > total - 1:
        raise ValueError(f"the VAE encodes 1 + {VAE_TEMPORAL_STRIDE}k frames with the image first, got {total} ({tail_frames} from the tail)")
    cache: list[torch.Tensor | None] = [None] * _causal_convs(vae.encoder)
    first_tail = total - tail_frames  # index of the first tail frame

    def frames(start: int, end: int) -> torch.Tensor:
        pieces = [image.expand(-1, -1, max(0, min(end, first_tail) - start), -1, -1)]
        if tail is not None and end > first_tail:
            pieces.append(tail[:, :, max(0, start - first_tail) : end - first_tail])
        return torch.cat(pieces, dim=2)

    hidden = [vae.encoder(frames(0, 1), feat_cache=cache, feat_idx=[0])]
    start, previous = 1, _snapshot(cache)
    while start < total:
        end = start + VAE_TEMPORAL_STRIDE
        hidden.append(vae.encoder(frames(start, end), feat_cache=cache, feat_idx=[0]))
        start = end
        pure_ahead = (first_tail - start) // VAE_TEMPORAL_STRIDE  # further groups made only of the image
        if pure_ahead > 0 and end <= first_tail and _same(cache, previous):
            hidden += [hidden[-1]] * pure_ahead  # a fixed point: every further image-only group repeats this one exactly
            start += pure_ahead * VAE_TEMPORAL_STRIDE
        previous = _snapshot(cache)
    mu = vae.quant_conv(torch.cat(hidden, dim=2))[:, : vae.config["z_dim"]]
    mean, std = _stats(vae, mu)
    return (mu - mean) / std


def warm_decoder(vae: AutoencoderKLWan, latents: torch.Tensor, cache: DecoderCache) -> None:
    """Run ``latents`` [B, C, T, h, w] through the decoder into ``cache``, skipping repeats once the cache is a fixed point."""
    t = 0
    while t < latents.shape[2]:
        before = _snapshot(cache.features)
        decode(vae, latents[:, :, t : t + 1], cache)
        t += 1
        repeats = 0
        while t + repeats < latents.shape[2] and torch.equal(latents[:, :, t + repeats], latents[:, :, t - 1]):
            repeats += 1
        if repeats and t > 1 and torch.equal(latents[:, :, t - 1], latents[:, :, t - 2]) and _same(cache.features, before):
            cache.frames_decoded += repeats
            t += repeats
