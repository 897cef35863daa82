"""Training data: clip shapes and ground truth, latents as inference makes them, chunk windows as the stages use them."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from avatarstream.avatars.identity import HELD_OUT_IDENTITIES
from avatarstream.avatars.speech import espeak_available
from avatarstream.models.demo import AudioEncoder, CausalVAE, DemoConfig
from avatarstream.training.a2v import sample_chunks
from avatarstream.training.a2v_parts import ChunkGeometry
from avatarstream.training.data import ClipSpec, frame_batches, make_clip
from avatarstream.training.latents import encode_clips

needs_espeak = pytest.mark.skipif(not espeak_available(), reason="espeak-ng not installed (scripts/system-deps.sh installs it)")


def test_random_frame_batches_have_the_training_shape() -> None:
    batch = next(frame_batches(seed=0, frames=2, batch=3, workers=0))
    assert batch.shape == (3, 2, 3, 256, 256)
    assert -1.0 <= batch.min() and batch.max() <= 1.0


def test_training_identities_are_never_held_out() -> None:
    specs = [ClipSpec.training(0, i, 4.0) for i in range(200)]
    assert all(s.identity_seed < HELD_OUT_IDENTITIES for s in specs)
    assert ClipSpec.training(0, 3, 4.0) == specs[3]


@pytest.fixture(scope="module")
def clip():
    if not espeak_available():
        pytest.skip("espeak-ng not installed")
    return make_clip(ClipSpec(identity_seed=12, motion_seed=3, audio_seed=4, seconds=2.0))


@needs_espeak
def test_clip_has_frames_audio_and_ground_truth(clip) -> None:
    assert clip.frames.shape == (50, 256, 256, 3) and clip.frames.dtype == np.uint8
    assert clip.audio.shape == (32000,)
    assert clip.mouth.openness.shape == (50,) and 0 <= clip.mouth.openness.min() and clip.mouth.openness.max() <= 1
    assert clip.reference.shape == (256, 256, 3)


@needs_espeak
def test_latents_and_chunk_windows(clip) -> None:
    cfg = DemoConfig()
    torch.manual_seed(0)
    data = encode_clips(CausalVAE(cfg), [clip], cfg.base_size, sr_every=10)
    assert data.base[0].shape == (16, 50, 16, 16)
    assert data.sr_low.shape == (5, 16, 16, 16) and data.sr_high.shape == (5, 16, 32, 32)
    assert data.reference_base.shape == (1, 16, 16, 16) and data.reference_full.shape == (1, 16, 32, 32)

    encoder = AudioEncoder(cfg)
    context = (encoder.frames_before, encoder.frames_after)
    g = torch.Generator().manual_seed(0)
    n = sample_chunks(data, "N", 6, ChunkGeometry(first_chunk_share=0.5), context, cfg.samples_per_frame, g)
    assert n.x0.shape == (6, 16, 14, 16, 16)
    assert n.cond_mask[:, :2].eq(1).all() and n.cond_mask[:, 2:].eq(0).all()
    assert n.audio.shape == (6, (14 + sum(context)) * cfg.samples_per_frame)
    assert encoder(n.audio).shape == (6, 14, 4, 128)  # exactly the window the stage feeds the encoder
    # first chunks: the reference latent stands in for the motion frames, as in the A2V stage
    firsts = [i for i in range(6) if torch.equal(n.x0[i, :, 0], data.reference_base[0].float())]
    assert firsts and all(torch.equal(n.x0[i, :, 2:], data.base[0][:, :12].float()) for i in firsts)

    i_chunk = sample_chunks(data, "I", 4, ChunkGeometry(), context, cfg.samples_per_frame, g)
    assert i_chunk.x0.shape == (4, 16, 5, 16, 16)
    assert i_chunk.cond_mask[0].tolist() == [1, 0, 0, 0, 1]
