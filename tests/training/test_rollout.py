"""Rollouts: chains sampled with the current weights become the conditioning of later training windows."""

from __future__ import annotations

import torch
from test_steps import synthetic_latents

from avatarstream.models.demo import A2VDiT, AudioEncoder, DemoConfig, FlowMatchEuler, ReferenceEncoder, TextEncoder
from avatarstream.training.a2v import WindowAudio, sample_chunks, train_a2v
from avatarstream.training.a2v_parts import A2VModels, ChunkGeometry
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
    sample_chains(
        models,
        data,
        text,
        FlowMatchEuler(2, 3.0),
        ChunkGeometry(),
        settings,
        WindowAudio(data, context, cfg.samples_per_frame),
        torch.Generator().manual_seed(0),
        buffer,
    )
    return data, context, cfg, buffer


def test_chains_from_the_reference_follow_the_chunk_plan() -> None:
    data, _, _, buffer = chains(RolloutSettings(chains=2, depth=3, from_reference=1.0))
    # N0 is conditioned on the reference at window start -2; N1, N2, N3 would start 12 frames apart
    assert sorted(e.start for e in buffer.n) == [10, 10, 22, 22, 34, 34]
    channels, _, height, width = data.base[0].shape
    assert all(e.frames.shape == (channels, 2, height, width) for e in buffer.n)
    # one I-window of 5 frames from inside each generated chunk N(k), whose frames are [12k, 12k + 12)
    assert len(buffer.i) == 6
    for k, chunk_entries in enumerate(zip(*[iter(buffer.i)] * 2)):
        for entry in chunk_entries:
            assert 12 * k <= entry.start <= 12 * k + 12 - 5
            assert entry.frames.shape == (channels, 5, height, width)
    for chain in range(2):
        n_entries, i_entries = list(buffer.n)[chain::2], list(buffer.i)[chain::2]
        for n_entry, i_entry in zip(n_entries, i_entries):
            # frames both windows took from the same generated chunk are the same frames
            overlap = range(max(n_entry.start, i_entry.start), min(n_entry.start + 2, i_entry.start + 5))
            for frame in overlap:
                assert torch.equal(n_entry.frames[:, frame - n_entry.start], i_entry.frames[:, frame - i_entry.start])
        truth = data.base[n_entries[0].clip][:, n_entries[0].start : n_entries[0].start + 2].float()
        assert not torch.allclose(n_entries[0].frames.float(), truth, atol=0.1)  # generated, not ground truth


def test_chains_from_ground_truth_stay_inside_their_clip() -> None:
    data, _, _, buffer = chains(RolloutSettings(chains=8, depth=2, from_reference=0.0), frames=70)
    frames = data.base[0].shape[1]
    assert len(buffer.n) == 16 and len(buffer.i) == 16
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


def test_windows_take_generated_conditioning() -> None:
    data, context, cfg, buffer = chains(RolloutSettings(share=1.0, chains=2, depth=2, from_reference=1.0))
    g = torch.Generator().manual_seed(0)
    n = sample_chunks(data, "N", 6, ChunkGeometry(), context, cfg.samples_per_frame, g, buffer)
    for b in range(6):  # generated motion frames, then the clip's own frames as the target
        entry = next(e for e in buffer.n if torch.equal(n.cond[b][:, :2].half(), e.frames))
        truth = data.base[entry.clip][:, entry.start : entry.start + 14].float()
        assert torch.equal(n.x0[b], truth) and torch.equal(n.cond[b][:, 2:], truth[:, 2:])
    i = sample_chunks(data, "I", 6, ChunkGeometry(), context, cfg.samples_per_frame, g, buffer)
    for b in range(6):  # anchors and target all generated, from one chunk
        assert any(torch.equal(i.x0[b].half(), e.frames) for e in buffer.i)
        assert torch.equal(i.cond[b], i.x0[b])
    assert n.audio.shape[1] == (14 + sum(context)) * cfg.samples_per_frame
    assert i.audio.shape[1] == (5 + sum(context)) * cfg.samples_per_frame


def test_training_with_rollouts_runs_and_changes_the_weights() -> None:
    cfg, models, text, data, _ = tiny_setup()
    before = [p.clone() for p in models.parameters()]
    train_a2v(
        models,
        data,
        text,
        4,
        0,
        samples_per_frame=cfg.samples_per_frame,
        sampler=FlowMatchEuler(2, 3.0),
        rollout=RolloutSettings(every=2, chains=2, depth=2),
        batch=2,
    )
    assert any(not torch.equal(a, b) for a, b in zip(before, models.parameters()))
