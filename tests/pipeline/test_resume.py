"""A run carried on from its resumable state makes the frames the unbroken run makes, and the state does not grow."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from avatarstream.families.assemble import build_pipeline
from avatarstream.families.registry import load_family
from avatarstream.pipeline.observer import RunObserver
from avatarstream.pipeline.resume import Resumable
from avatarstream.sources.pcm import PcmBlock
from pipeline.test_streaming import RATE, frames_of, pieces, speechy


class Saver(RunObserver):
    wants_resumable = True

    def __init__(self) -> None:
        self.states: list[Resumable] = []

    def on_resumable(self, state: Resumable) -> None:
        self.states.append(state)


@pytest.fixture(scope="module", params=[2, 0], ids=["interpolated", "plain"])
def pipeline(request):
    return build_pipeline(load_family("demo-tiny"), torch.device("cpu"), {"chunk_frames": 6, "interp_frames": request.param})


def test_a_resumed_run_continues_the_same_frames(pipeline) -> None:
    reference = np.full((64, 64, 3), 128, dtype=np.uint8)
    samples = speechy(4.0)
    saver = Saver()
    whole = list(pipeline.stream(iter(pieces(samples, 3)), reference, seed=5, observers=[saver]))
    assert len(saver.states) >= 6
    for state in (saver.states[2], saver.states[5]):
        start = state.audio.input_samples
        assert 0 < start < samples.shape[1], "the state was taken mid-stream"
        rest = list(pipeline.stream(iter(pieces(samples[:, start:], 4)), np.zeros_like(reference), seed=0, resume=state))
        assert rest[0].first_frame == state.published_frames > 0, "the timeline continues where the state stopped"
        assert sum(c.num_frames for c in rest) == sum(c.num_frames for c in whole) - state.published_frames
        np.testing.assert_array_equal(frames_of(rest), frames_of(whole)[state.published_frames :])
        # the audio published with the frames continues too; only the seam, within the resampler's delay, may differ
        heard = np.concatenate([c.audio for c in rest], 1)
        expected = np.concatenate([c.audio for c in whole], 1)[:, -heard.shape[1] :]
        assert heard.shape == expected.shape
        seam = start * pipeline.output_sample_rate // RATE - state.published_frames * pipeline.output_sample_rate // pipeline.fps
        differs = np.nonzero(np.abs(heard - expected).max(0) > 1e-4)[0]
        assert differs.size < 100 and (differs.size == 0 or (seam - 96 <= differs.min() and differs.max() <= seam + 96)), (seam, differs)


def test_the_state_stays_the_same_size(pipeline) -> None:
    saver = Saver()
    for _ in pipeline.stream([PcmBlock(speechy(6.0), RATE)], np.full((64, 64, 3), 90, dtype=np.uint8), observers=[saver]):
        pass
    early, late = saver.states[3], saver.states[-2]
    assert len(late.held) <= 2
    assert late.nbytes <= early.nbytes * 1.1, (early.nbytes, late.nbytes)
    assert all(t.device.type == "cpu" for t in late.held.values())


def test_a_run_without_savers_takes_no_state(pipeline) -> None:
    class Counter(RunObserver):
        calls = 0

        def on_resumable(self, state: Resumable) -> None:
            Counter.calls += 1

    list(pipeline.stream([PcmBlock(speechy(1.0), RATE)], np.zeros((64, 64, 3), np.uint8), observers=[Counter()]))
    assert Counter.calls == 0
