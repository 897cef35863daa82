"""The Wan VAE's streaming decode: any split equals the whole, caches are per session and bounded."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from avatarstream.components.wan.load_vae import load_vae
from avatarstream.components.wan.vae import DecoderCache, decode, encode


@pytest.fixture(scope="module")
def vae(golden_dir: Path) -> torch.nn.Module:
    return load_vae(golden_dir / "weights" / "Wan2.1-I2V-14B-480P", "original", torch.float32)


@pytest.fixture(scope="module")
def latents() -> torch.Tensor:
    return torch.randn(1, 16, 7, 4, 5, generator=torch.Generator().manual_seed(3))  # odd sizes: the VAE allows them


def _decode_in(vae: torch.nn.Module, latents: torch.Tensor, split: list[int]) -> torch.Tensor:
    cache = DecoderCache.for_vae(vae)
    with torch.inference_mode():
        return torch.cat([decode(vae, part, cache) for part in latents.split(split, dim=2)], dim=2)


@pytest.mark.parametrize("split", [[1, 6], [3, 4], [2, 2, 2, 1], [1] * 7], ids=str)
def test_chunked_decode_equals_whole_decode(vae: torch.nn.Module, latents: torch.Tensor, split: list[int]) -> None:
    whole = _decode_in(vae, latents, [7])
    assert whole.shape == (1, 3, 1 + 4 * 6, 32, 40)
    assert torch.equal(_decode_in(vae, latents, split), whole)


def test_whole_decode_equals_diffusers_decode(vae: torch.nn.Module, latents: torch.Tensor) -> None:
    mean = torch.tensor(vae.config.latents_mean).view(1, -1, 1, 1, 1)
    std = torch.tensor(vae.config.latents_std).view(1, -1, 1, 1, 1)
    with torch.inference_mode():
        theirs = vae.decode(latents * std + mean).sample
    torch.testing.assert_close(_decode_in(vae, latents, [7]), theirs, rtol=0, atol=1e-5)


def test_cache_size_does_not_grow_with_chunks(vae: torch.nn.Module, latents: torch.Tensor) -> None:
    cache = DecoderCache.for_vae(vae)
    sizes = []
    with torch.inference_mode():
        for _ in range(6):
            decode(vae, latents[:, :, :2], cache)
            sizes.append(cache.nbytes())
    assert sizes[0] > 0 and len(set(sizes[1:])) == 1 and cache.frames_decoded == 12


def test_two_sessions_never_share_a_cache(vae: torch.nn.Module, latents: torch.Tensor) -> None:
    other = torch.randn_like(latents)
    alone = _decode_in(vae, latents, [3, 4])
    a, b = DecoderCache.for_vae(vae), DecoderCache.for_vae(vae)
    with torch.inference_mode():
        first_a = decode(vae, latents[:, :, :3], a)
        decode(vae, other[:, :, :5], b)  # another session decodes in between
        second_a = decode(vae, latents[:, :, 3:], a)
    assert torch.equal(torch.cat([first_a, second_a], dim=2), alone)


def test_encode_refuses_frame_counts_the_vae_cannot_take(vae: torch.nn.Module) -> None:
    with pytest.raises(ValueError, match="1 \\+ 4k"):
        encode(vae, torch.zeros(1, 3, 4, 16, 16))
