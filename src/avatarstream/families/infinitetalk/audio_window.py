"""How far the rolling-window audio features are from whole-file features, per window length.

The reference encodes the whole file at once (loudness-normalised as a
whole); the infinitetalk family encodes a bounded window per chunk. This
runs the family's own context stage over a clip for each window length and
compares every chunk's DiT audio input with the one whole-file features give.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from transformers import Wav2Vec2Model

from avatarstream.models.infinitetalk.audio_features import SAMPLE_RATE, audio_windows, loudness_normalize, wav2vec2_features
from avatarstream.pipeline.audio_window import AudioWindow
from avatarstream.pipeline.plan import Plan, schedule
from avatarstream.runtime.module import Module
from avatarstream.sources.audio_timeline import SampleTrack
from avatarstream.stages.infinitetalk.context import WanAudioContextStage


def window_errors(
    audio_encoder: Module, stage_like: WanAudioContextStage, plan: Plan, waveform: np.ndarray, spans: Sequence[tuple[float, int]], fps: int = 25
) -> dict[tuple[float, int], dict[str, float]]:
    """Per (window seconds, look-ahead frames): max and mean absolute difference to whole-file features, and the mean relative to their scale."""
    samples_per_frame = SAMPLE_RATE // fps
    total = len(waveform) // samples_per_frame
    waveform = waveform[: total * samples_per_frame]
    track = SampleTrack(SAMPLE_RATE, 1)
    track.append(waveform[None].astype(np.float32))
    audio = AudioWindow(track, samples_per_frame, stage_like.frames, lambda: total)
    with torch.inference_mode():
        whole = wav2vec2_features(audio_encoder.network_as(Wav2Vec2Model), torch.from_numpy(loudness_normalize(waveform)))
        scale = whole.abs().mean().item()
        results = {}
        for window_s, lookahead in spans:
            stage = WanAudioContextStage(audio_encoder, stage_like.frames, stage_like.latent_shape, fps=fps, window_s=window_s, lookahead_frames=lookahead)
            worst, mean, count = 0.0, 0.0, 0
            for chunk in schedule(plan, stage.frames.timeline_frames(total)):
                if chunk.kind != "N":
                    continue
                first, end = stage.frames.window_video_range(chunk.window_start, chunk.window_end)
                reference = audio_windows(whole, first, end - first)
                diff = (stage.windows(audio, chunk) - reference).abs()
                worst, mean, count = max(worst, diff.max().item()), mean + diff.mean().item(), count + 1
            results[(window_s, lookahead)] = {"max_abs": worst, "mean_abs": mean / count, "relative_mean": mean / count / scale, "chunks": count}
        return results
