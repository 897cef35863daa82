"""Chunk stage ContextGen: wav2vec2 features over a bounded rolling window of audio, per-frame windows, noise.

The reference computes the features of the whole file once; here each chunk
reads at most ``window_s`` seconds ending ``lookahead`` frames after the
chunk, loudness-normalises that window alone, and takes the features of its
own frames from it, so memory never depends on the session's length and a
live session needs no future audio beyond the look-ahead. At the start of the
audio indices clamp to its first frame, at its end the reference's mirror
rule applies, exactly as for the whole file.
"""

from __future__ import annotations

import math

import torch
from transformers import Wav2Vec2Model

from avatarstream.models.infinitetalk.audio_features import SAMPLE_RATE, extend_for_last_chunk, loudness_normalize, wav2vec2_features, window_indices
from avatarstream.models.infinitetalk.config import AUDIO_WINDOW
from avatarstream.pipeline.audio_window import AudioWindow
from avatarstream.pipeline.chunks import Chunk, FrameLayout
from avatarstream.pipeline.stage import Stage
from avatarstream.pipeline.state import StageContext
from avatarstream.runtime.devices import upload
from avatarstream.runtime.module import Module
from avatarstream.stages.common import device_and_dtype
from avatarstream.stages.seeding import seeded_noise


class WanAudioContextStage(Stage):
    name = "context_gen"
    phase = "chunk"
    reads = ("chunk", "audio")
    writes = ("audio_windows", "noise")

    def __init__(
        self, audio_encoder: Module, frames: FrameLayout, latent_shape: tuple[int, int, int], *, fps: int, window_s: float, lookahead_frames: int
    ) -> None:
        if window_s <= 0 or lookahead_frames < AUDIO_WINDOW // 2:
            raise ValueError(f"need window_s > 0 and lookahead_frames >= {AUDIO_WINDOW // 2}")
        self.audio_encoder = audio_encoder
        self.frames = frames
        self.latent_shape = latent_shape  # (channels, height, width) of the latents
        self.window_frames = math.ceil(window_s * fps)
        self.lookahead_frames = lookahead_frames

    def modules(self) -> tuple[Module, ...]:
        return (self.audio_encoder,)

    def audio_context_frames(self) -> tuple[int, int]:
        return (self.window_frames, self.lookahead_frames)

    def feature_span(self, window_start: int, window_end: int, total: int | None) -> tuple[int, int]:
        """Video frames whose audio is encoded for a window: at most ``window_s`` up to the look-ahead, never past the end."""
        first, end = self.frames.window_video_range(window_start, window_end)
        stop = end + self.lookahead_frames if total is None else min(end + self.lookahead_frames, total)
        start = max(0, min(stop - self.window_frames, first - AUDIO_WINDOW // 2))
        return start, max(stop, start + 1)

    def windows(self, audio: AudioWindow, chunk: Chunk) -> torch.Tensor:
        """The DiT's audio input for ``chunk``: [1, video frames of the window, 5, layers, hidden]."""
        device, dtype = device_and_dtype(self.audio_encoder)
        first, end = self.frames.window_video_range(chunk.window_start, chunk.window_end)
        start, stop = self.feature_span(chunk.window_start, chunk.window_end, audio.total_frames)
        samples = loudness_normalize(audio.read(start, stop), SAMPLE_RATE)
        features = wav2vec2_features(self.audio_encoder.network_as(Wav2Vec2Model), upload(torch.from_numpy(samples), device, dtype))
        features = extend_for_last_chunk(features, first - start, end - first)
        rows = upload(window_indices(first - start, end - first, features.shape[0]), device)  # a host index would be copied up blocking
        return features[rows][None]  # audio_windows, with its index on the device

    def run(self, ctx: StageContext) -> None:
        chunk = ctx["chunk"]
        ctx["audio_windows"] = self.windows(ctx["audio"], chunk)
        device, _ = device_and_dtype(self.audio_encoder)
        channels, height, width = self.latent_shape
        ctx["noise"] = seeded_noise((1, channels, chunk.window_frames, height, width), device, ctx.seed, "chunk", chunk.kind, chunk.index)
