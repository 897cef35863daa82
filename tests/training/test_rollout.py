"""Rollouts: chains sampled with the current weights become the conditioning of later training windows."""

from __future__ import annotations

import torch
from test_steps import synthetic_latents

from avatarstream.models.demo import A2VDiT, AudioEncoder, DemoConfig, FlowMatchEuler, ReferenceEncoder, TextEncoder
from avatarstream.training.a2v import A2VModels, ChunkGeometry, WindowAudio, sample_chunks, train_a2v
from avatarstream.training.rollout import RolloutBuffer, RolloutSettings, sample_chains


def tiny_setup(frames: int = 60):
    cfg = DemoConfig.tiny()
    torch.manual_seed(0)
    models = A2VModels(A2VDiT(cfg), AudioEncoder(cfg), ReferenceEncoder(cfg)).eval()
    text_encoder = TextEncoder(cfg)
    with torch.no_grad():
        text = text_encoder(text_encoder.tokenize(""))
    data = synthetic_latents(cfg, clips=2, frames=frames)
    context = (models.audio_encoder.frames_before, models.audio_encoder.frames_after)
    return cfg, models, text, data, context


def chains(settings: RolloutSettings, frames: int = 60):
    cfg, models, text, data, context = tiny_setup(frames)
    buffer = RolloutBuffer(settings, seed=0)
    sample_chains(models, data, text, FlowMatchEuler(2, 3.0), ChunkGeometry(), settings,
                  WindowAudio(data, context, cfg.samples_per_frame), torch.Generator().manual_seed(0), buffer)
    return data, context, cfg, buffer


def test_chains_from_the_reference_follow_the_chunk_plan() -> None:
    data, _, _, buffer = chains(RolloutSettings(chains=2, depth=3, from_reference=1.0))
    # N0 is conditioned on the reference at window start -2; N1, N2, N3 would start 12 frames apart
    assert sorted(e.start for e in buffer.n) == [10, 10, 22, 22, 34, 34]
    # the I-chunk between N(k) and N(k+1) starts on N(k)'s last frame
    assert sorted(e.start for e in buffer.i) == [11, 11, 23, 23]
    channels, _, height, width = data.base[0].shape
    assert all(e.frames.shape == (channels, 2, height, width) for e in list(buffer.n) + list(buffer.i))
    for n_entry, i_entry in zip([e for e in buffer.n if e.start < 34], buffer.i):
        # both come from the same generated chunk: its last frame is the I-chunk's first anchor
        assert n_entry.clip == i_entry.clip
        assert torch.equal(i_entry.frames[:, 0], n_entry.frames[:, 1])
        assert not torch.allclose(n_entry.frames.float(), data.base[n_entry.clip][:, n_entry.start:n_entry.start + 2].float(),
                                  atol=0.1)


def test_chains_from_ground_truth_stay_inside_their_clip() -> None:
    data, _, _, buffer = chains(RolloutSettings(chains=8, depth=2, from_reference=0.0), frames=70)
    frames = data.base[0].shape[1]
    assert len(buffer.n) == 16 and len(buffer.i) == 8
    assert all(0 <= e.start and e.start + 14 <= frames for e in buffer.n)
    assert all(0 <= e.start and e.start + 5 <= frames for e in buffer.i)


def test_buffer_is_bounded_and_draws_at_its_share() -> None:
    settings = RolloutSettings(share=0.25, capacity=5)
    buffer = RolloutBuffer(settings, seed=1)
    assert buffer.draw("N") is None  # empty: ground truth
    for start in range(20):
        buffer.add("N", [0], [start], torch.zeros(1, 16, 2, 8, 8))
    assert len(buffer.n) == 5 and {e.start for e in buffer.n} == {15, 16, 17, 18, 19}
    drawn = sum(buffer.draw("N") is not None for _ in range(4000))
    assert 800 < drawn < 1200


def test_windows_take_generated_conditioning_and_ground_truth_targets() -> None:
    data, context, cfg, buffer = chains(RolloutSettings(share=1.0, chains=2, depth=2, from_reference=1.0))
    g = torch.Generator().manual_seed(0)
    for kind, positions, length in (("N", [0, 1], 14), ("I", [0, 4], 5)):
        batch = sample_chunks(data, kind, 6, ChunkGeometry(), context, cfg.samples_per_frame, g, buffer)
        entries = buffer.n if kind == "N" else buffer.i
        for b in range(6):
            entry = next(e for e in entries if torch.equal(batch.cond[b][:, positions].half(), e.frames))
            truth = data.base[entry.clip][:, entry.start:entry.start + length].float()
            assert torch.equal(batch.x0[b], truth)
            others = [p for p in range(length) if p not in positions]
            assert torch.equal(batch.cond[b][:, others], truth[:, others])


def test_training_with_rollouts_runs_and_changes_the_weights() -> None:
    cfg, models, text, data, _ = tiny_setup()
    before = [p.clone() for p in models.parameters()]
    train_a2v(models, data, text, 4, 0, samples_per_frame=cfg.samples_per_frame, sampler=FlowMatchEuler(2, 3.0),
              rollout=RolloutSettings(every=2, chains=2, depth=2), batch=2)
    assert any(not torch.equal(a, b) for a, b in zip(before, models.parameters()))
