"""Driving audio: held-out sentences never reach training; non-speech keeps the mouth shut."""

from __future__ import annotations

import numpy as np
import pytest

from avatarstream.avatars import mouth_track
from avatarstream.avatars.speech import SAMPLE_RATE, Voice, espeak_available, non_speech, resample, sentence, sentence_seeds, speech_track


def test_sentence_splits_are_disjoint() -> None:
    train = {sentence(s) for s in sentence_seeds("train", 200)}
    held = {sentence(s) for s in sentence_seeds("heldout", 50)}
    assert len(train) > 150 and len(held) > 40
    assert set(sentence_seeds("train", 200)).isdisjoint(sentence_seeds("heldout", 50))


def test_non_speech_keeps_the_mouth_shut() -> None:
    rng = np.random.default_rng(0)
    for _ in range(40):
        assert mouth_track(non_speech(1.0, rng), SAMPLE_RATE).openness.max() < 0.15


def test_resample_keeps_length_and_tone() -> None:
    t = np.arange(22050) / 22050
    out = resample(np.sin(2 * np.pi * 440 * t), 22050, SAMPLE_RATE)
    assert len(out) == SAMPLE_RATE
    spectrum = np.abs(np.fft.rfft(out))
    assert abs(np.argmax(spectrum) - 440) <= 1


@pytest.mark.skipif(not espeak_available(), reason="espeak-ng not installed (scripts/system-deps.sh installs it)")
def test_speech_track_has_speech_and_pauses() -> None:
    audio = speech_track(6.0, seed=1, split="heldout")
    assert audio.shape == (6 * SAMPLE_RATE,) and audio.dtype == np.float32
    openness = mouth_track(audio, SAMPLE_RATE).openness
    assert (openness > 0.3).mean() > 0.3 and (openness < 0.05).mean() > 0.05
    assert Voice.from_seed(3) == Voice.from_seed(3)
