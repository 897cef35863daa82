import dataclasses

import pytest
import torch

from avatarstream.models.demo import (
    A2VDiT,
    AudioEncoder,
    CausalVAE,
    DemoConfig,
    ReferenceEncoder,
    SRDiT,
    TextEncoder,
)

CFG = DemoConfig.tiny()
C, H = CFG.vae.latent_channels, CFG.base_latent_size


def build(cls: type, cfg: DemoConfig = CFG) -> torch.nn.Module:
    torch.manual_seed(0)
    return cls(cfg).eval()


def inputs(frames: int = 5, seed: int = 1) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(1, C, frames, H, H, generator=g)
    cond = torch.zeros_like(x)
    cond[:, :, 0] = torch.randn(1, C, H, H, generator=g)
    mask = torch.zeros(1, frames)
    mask[:, 0] = 1.0
    return {
        "x": x,
        "cond": cond,
        "mask": mask,
        "t": torch.full((1,), 0.7),
        "audio": torch.randn(1, frames, CFG.audio.tokens_per_frame, CFG.audio.dim, generator=g),
        "text": torch.randn(1, 3, CFG.text.dim, generator=g),
        "reference": build(ReferenceEncoder)(torch.randn(1, C, H, H, generator=g)),
    }


def run(model: torch.nn.Module, **kw: torch.Tensor) -> torch.Tensor:
    with torch.inference_mode():
        return model(**kw)


def test_reference_tokens_are_rich() -> None:
    enc = build(ReferenceEncoder)
    tokens = run(enc, latent=torch.randn(2, C, H, H))
    grid = H // CFG.dit.patch_size
    assert tokens.shape == (2, CFG.reference.global_tokens + grid * grid, CFG.dit.dim)
    assert enc.num_tokens == tokens.shape[1]
    assert (tokens[0] - tokens[1]).abs().max() > 1e-3  # depends on the latent
    assert tokens[0, CFG.reference.global_tokens :].std(dim=0).mean() > 1e-2  # patch tokens differ


@pytest.mark.parametrize("frames", [1, 5, 10])
def test_a2v_output_shape(frames: int) -> None:
    out = run(build(A2VDiT), **inputs(frames))
    assert out.shape == (1, C, frames, H, H)
    assert torch.isfinite(out).all() and 0.05 < out.std() < 20


@pytest.mark.parametrize("name", ["x", "cond", "mask", "t", "text", "reference", "audio"])
def test_a2v_depends_on_every_input(name: str) -> None:
    model = build(A2VDiT)
    base = inputs()
    changed = dict(base)
    changed[name] = 1.0 - base[name] if name in ("mask", "t") else base[name] + torch.randn_like(base[name])
    assert (run(model, **changed) - run(model, **base)).abs().max() > 1e-4


def test_a2v_audio_is_frame_local() -> None:
    """With one block, frame t's audio can only reach frame t's output."""
    assert CFG.dit.layers == 1
    model = build(A2VDiT)
    base = inputs(6)
    changed = dict(base, audio=base["audio"].clone())
    changed["audio"][:, 3] += 1.0
    diff = (run(model, **changed) - run(model, **base)).abs().amax(dim=(0, 1, 3, 4))
    assert diff[3] > 1e-3
    torch.testing.assert_close(diff[[0, 1, 2, 4, 5]], torch.zeros(5), atol=1e-6, rtol=0)


def test_a2v_audio_effect_stays_mostly_on_its_frame_with_depth() -> None:
    cfg = dataclasses.replace(CFG, dit=dataclasses.replace(CFG.dit, layers=3))
    model = build(A2VDiT, cfg)
    base = inputs(6)
    changed = dict(base, audio=base["audio"].clone())
    changed["audio"][:, 2] += 1.0
    diff = (run(model, **changed) - run(model, **base)).abs().mean(dim=(0, 1, 3, 4))
    others = torch.cat([diff[:2], diff[3:]])
    assert diff[2] > 5 * others.max()


def test_a2v_batch_rows_are_independent() -> None:
    model = build(A2VDiT)
    first, second = inputs(3, seed=1), inputs(3, seed=2)
    both = {k: torch.cat([first[k], second[k]]) for k in first}
    out = run(model, **both)
    torch.testing.assert_close(out[1:], run(model, **second), atol=1e-5, rtol=0)


def test_a2v_rejects_mismatched_shapes() -> None:
    model = build(A2VDiT)
    base = inputs(4)
    with pytest.raises(ValueError, match="audio"):
        run(model, **dict(base, audio=base["audio"][:, :3]))
    with pytest.raises(ValueError, match="reference"):
        run(model, **dict(base, reference=base["reference"][:, 1:]))


def test_sr_shape_and_reference_dependence() -> None:
    model = build(SRDiT)
    g = torch.Generator().manual_seed(3)
    low = torch.randn(1, C, 4, H, H, generator=g)
    ref = torch.randn(1, C, 2 * H, 2 * H, generator=g)
    noise = torch.randn(1, C, 4, 2 * H, 2 * H, generator=g)
    out = run(model, low=low, reference=ref, noise=noise)
    assert out.shape == (1, C, 4, 2 * H, 2 * H)
    assert torch.isfinite(out).all() and out.std() > 0.05
    other = run(model, low=low, reference=ref + torch.randn_like(ref), noise=noise)
    assert (other - out).abs().max() > 1e-4
    # frames are independent, so any split of a chunk gives the same result
    part = run(model, low=low[:, :, 1:3], reference=ref, noise=noise[:, :, 1:3])
    torch.testing.assert_close(part, out[:, :, 1:3], atol=1e-5, rtol=0)


def test_sr_rejects_mismatched_shapes() -> None:
    model = build(SRDiT)
    low = torch.randn(1, C, 2, H, H)
    with pytest.raises(ValueError, match="do not match"):
        run(model, low=low, reference=torch.randn(1, C, H, H), noise=torch.randn(1, C, 2, 2 * H, 2 * H))


@pytest.mark.parametrize("cls", [A2VDiT, SRDiT, ReferenceEncoder, CausalVAE, AudioEncoder, TextEncoder])
def test_construction_is_deterministic(cls: type) -> None:
    a, b = build(cls).state_dict(), build(cls).state_dict()
    assert a.keys() == b.keys()
    assert all(torch.equal(a[k], b[k]) for k in a)
