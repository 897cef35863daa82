"""LiveAvatar's audio for live sessions: a bounded rolling window, measured against the reference's whole-file features."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from avatarstream.families.liveavatar.load_audio import AudioEncoder, load_audio_encoder
from avatarstream.models.liveavatar.audio_features import bucket_indices, frame_features, hidden_states, normalize, to_feature_rate
from avatarstream.parity.fixture import read_wav_int16
from avatarstream.pipeline.chunks import FrameLayout
from avatarstream.runtime.module import Module
from avatarstream.stages.liveavatar.context import LiveAvatarAudioStage

GOLDEN = Path(__file__).parents[1] / "fixtures" / "liveavatar-tiny"
SAMPLES_PER_FRAME = 640


class FileAudio:
    """A finished audio file as the pipeline's AudioWindow presents it (silence outside it)."""

    def __init__(self, samples: np.ndarray) -> None:
        self.samples = samples
        self.total_frames = samples.size // SAMPLES_PER_FRAME

    def read(self, first: int, end: int) -> np.ndarray:
        out = np.zeros((end - first) * SAMPLES_PER_FRAME, np.float32)
        lo, hi = max(first * SAMPLES_PER_FRAME, 0), min(end * SAMPLES_PER_FRAME, self.samples.size)
        if hi > lo:
            out[lo - first * SAMPLES_PER_FRAME : hi - first * SAMPLES_PER_FRAME] = self.samples[lo:hi]
        return out


@pytest.fixture(scope="module")
def encoder() -> AudioEncoder:
    return load_audio_encoder(GOLDEN / "weights" / "Wan2.2-S2V-14B" / "wav2vec2-large-xlsr-53-english", torch.float32)


def _errors(encoder: AudioEncoder, audio: FileAudio, whole: torch.Tensor, window_s: float, lookahead: int) -> list[float]:
    stage = LiveAvatarAudioStage(
        Module("audio", encoder.network), encoder.extractor, FrameLayout(4, 1), (16, 8, 8), fps=25, window_s=window_s, lookahead_frames=lookahead
    )
    with torch.no_grad():
        return [(stage.features(audio, k, k + 12)[0] - whole[..., k : k + 12]).abs().max().item() for k in range(0, audio.total_frames - 12, 12)]


def test_a_window_holding_the_file_gives_the_whole_file_features_and_longer_windows_come_closer(encoder: AudioEncoder) -> None:
    samples = np.concatenate([read_wav_int16(GOLDEN / "cases" / "speech.wav")] * 3)
    samples = samples[: samples.size // SAMPLES_PER_FRAME * SAMPLES_PER_FRAME]  # the pipeline knows a file's length in whole frames
    audio = FileAudio(samples)
    with torch.no_grad():
        states = hidden_states(encoder.network, normalize(encoder.extractor, samples))
        whole = frame_features(to_feature_rate(states), bucket_indices(0, audio.total_frames))
    scale = whole.abs().max().item()
    assert max(_errors(encoder, audio, whole, 30.0, 300)) < 1e-4 * scale  # the same computation, in another order
    short, long = np.mean(_errors(encoder, audio, whole, 1.0, 0)), np.mean(_errors(encoder, audio, whole, 8.0, 12))
    print(f"\nrolling window vs whole file (tiny random wav2vec2): 1 s: {short:.3g}, 8 s + 12 frames: {long:.3g} (features up to {scale:.3g})")
    assert long < short
