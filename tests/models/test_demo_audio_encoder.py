import pytest
import torch

from avatarstream.models.demo import AudioEncoder, DemoConfig

CFG = DemoConfig.tiny()


@pytest.fixture(scope="module")
def encoder() -> AudioEncoder:
    torch.manual_seed(0)
    return AudioEncoder(CFG).eval()


def window(signal: torch.Tensor, enc: AudioEncoder, f0: int, f1: int) -> torch.Tensor:
    """Samples of frames [f0 - before, f1 + after), zero outside the signal (the caller's job)."""
    spf = enc.samples_per_frame
    start, stop = (f0 - enc.frames_before) * spf, (f1 + enc.frames_after) * spf
    out = torch.zeros(signal.shape[0], stop - start)
    lo, hi = max(start, 0), min(stop, signal.shape[1])
    out[:, lo - start : hi - start] = signal[:, lo:hi]
    return out


def test_contract_attributes(encoder: AudioEncoder) -> None:
    assert encoder.samples_per_frame == CFG.sample_rate // CFG.fps
    assert 2 <= encoder.frames_before <= 8 and 2 <= encoder.frames_after <= 8
    assert encoder.tokens_per_frame == CFG.audio.tokens_per_frame
    assert encoder.dim == CFG.audio.dim


def test_shapes(encoder: AudioEncoder) -> None:
    signal = torch.randn(2, 30 * encoder.samples_per_frame) * 0.1
    with torch.inference_mode():
        feats = encoder(window(signal, encoder, 5, 12))
    assert feats.shape == (2, 7, encoder.tokens_per_frame, encoder.dim)
    assert torch.isfinite(feats).all() and feats.std() > 0.1


def test_chunked_equals_whole(encoder: AudioEncoder) -> None:
    torch.manual_seed(1)
    signal = torch.randn(1, 100 * encoder.samples_per_frame) * 0.3
    with torch.inference_mode():
        whole = encoder(window(signal, encoder, 0, 100))
        parts = torch.cat([encoder(window(signal, encoder, 0, 37)), encoder(window(signal, encoder, 37, 100))], dim=1)
        single = encoder(window(signal, encoder, 61, 62))
    assert whole.shape[1] == 100
    torch.testing.assert_close(parts, whole, atol=1e-5, rtol=0)
    torch.testing.assert_close(single, whole[:, 61:62], atol=1e-5, rtol=0)


def test_frame_depends_only_on_its_window(encoder: AudioEncoder) -> None:
    """Audio outside [f - before, f + after) must not change frame f; audio inside does."""
    spf, f = encoder.samples_per_frame, 20
    torch.manual_seed(2)
    signal = torch.randn(1, 40 * spf) * 0.3
    outside = signal.clone()
    outside[:, : (f - encoder.frames_before) * spf] = torch.randn(1, (f - encoder.frames_before) * spf)
    outside[:, (f + 1 + encoder.frames_after) * spf :] = 0.0
    inside = signal.clone()
    inside[:, f * spf : (f + 1) * spf] *= -2.0
    with torch.inference_mode():
        ref = encoder(window(signal, encoder, f, f + 1))
        torch.testing.assert_close(encoder(window(outside, encoder, f, f + 1)), ref, atol=1e-5, rtol=0)
        assert (encoder(window(inside, encoder, f, f + 1)) - ref).abs().max() > 1e-3


@pytest.mark.parametrize("frames, extra", [(0, 0), (3, 1), (0, 7)], ids=["context-only", "partial-frame", "too-short"])
def test_inconsistent_length_raises(encoder: AudioEncoder, frames: int, extra: int) -> None:
    context = encoder.frames_before + encoder.frames_after
    with pytest.raises(ValueError, match="AudioEncoder needs"):
        encoder(torch.zeros(1, (context + frames) * encoder.samples_per_frame + extra))


def test_wrong_rank_raises(encoder: AudioEncoder) -> None:
    context = encoder.frames_before + encoder.frames_after
    with pytest.raises(ValueError, match=r"\[B, S\]"):
        encoder(torch.zeros((context + 1) * encoder.samples_per_frame))
