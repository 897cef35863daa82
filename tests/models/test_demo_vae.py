import pytest
import torch

from avatarstream.models.demo import CausalVAE, DemoConfig, VAEDecodeCache

CFG = DemoConfig.tiny()


@pytest.fixture(scope="module")
def vae() -> CausalVAE:
    torch.manual_seed(0)
    return CausalVAE(CFG).eval()


def latents(frames: int, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(1, CFG.vae.latent_channels, frames, CFG.latent_size, CFG.latent_size, generator=g)


def decode_in_chunks(vae: CausalVAE, z: torch.Tensor, sizes: list[int]) -> tuple[torch.Tensor, list[int]]:
    cache, outs, cache_bytes, start = None, [], [], 0
    for size in sizes:
        out, cache = vae.decode(z[:, :, start : start + size], cache)
        outs.append(out)
        cache_bytes.append(cache.nbytes)
        start += size
    assert start == z.shape[2]
    return torch.cat(outs, dim=2), cache_bytes


def test_encode_decode_shapes(vae: CausalVAE) -> None:
    video = torch.rand(2, 3, 3, CFG.image_size, CFG.image_size) * 2 - 1
    with torch.inference_mode():
        z = vae.encode(video)
        out, cache = vae.decode(z)
    assert vae.spatial_factor == 8
    assert z.shape == (2, vae.latent_channels, 3, CFG.image_size // 8, CFG.image_size // 8)
    assert out.shape == video.shape
    assert out.abs().max() <= 1.0 and out.std() > 1e-3
    assert isinstance(cache, VAEDecodeCache)


def test_encoder_is_per_frame(vae: CausalVAE) -> None:
    video = torch.rand(1, 3, 4, CFG.image_size, CFG.image_size) * 2 - 1
    with torch.inference_mode():
        torch.testing.assert_close(vae.encode(video)[:, :, 2:], vae.encode(video[:, :, 2:]))


@pytest.mark.parametrize("sizes", [[1] * 12, [5, 7], [1, 2, 3, 1, 5], [3, 1, 1, 7]])
def test_chunked_decode_with_cache_equals_whole(vae: CausalVAE, sizes: list[int]) -> None:
    z = latents(12)
    with torch.inference_mode():
        whole, _ = vae.decode(z)
        chunked, _ = decode_in_chunks(vae, z, sizes)
    torch.testing.assert_close(chunked, whole, atol=1e-4, rtol=0)


def test_decoder_is_causal_and_temporal(vae: CausalVAE) -> None:
    z = latents(6)
    changed = z.clone()
    changed[:, :, 3] = torch.randn_like(changed[:, :, 3])
    with torch.inference_mode():
        a, _ = vae.decode(z)
        b, _ = vae.decode(changed)
    torch.testing.assert_close(a[:, :, :3], b[:, :, :3])  # the past never sees the future
    assert (a[:, :, 4] - b[:, :, 4]).abs().max() > 1e-4  # later frames do see the past


def test_cache_size_is_bounded(vae: CausalVAE) -> None:
    with torch.inference_mode():
        _, few = decode_in_chunks(vae, latents(3), [1, 2])
        _, many = decode_in_chunks(vae, latents(40), [1] + [3] * 13)
    assert len(set(few + many)) == 1


def test_mismatched_cache_raises(vae: CausalVAE) -> None:
    with torch.inference_mode():
        _, cache = vae.decode(latents(2))
        with pytest.raises(ValueError, match="cache"):
            vae.decode(torch.zeros(2, CFG.vae.latent_channels, 1, CFG.latent_size, CFG.latent_size), cache)
