"""Chunk stage: each block's audio features from a bounded rolling window of audio, and its noise.

The reference runs wav2vec2 once over the whole file, normalises the whole
file, and resamples the 50 Hz states to 30 Hz over the file's length. Here
each block reads at most ``window_s`` seconds ending ``lookahead`` video
frames after the block, normalises that window alone, and reads the 30 Hz
rows its frames need at their nominal times (row r at r / 30 s), so memory
never depends on the session's length and a live session waits for no more
future audio than the look-ahead. Frames past the end of a finished audio
read zeros, as in the reference. How far this is from whole-file features is
measured in docs/models/liveavatar.md.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from transformers import Wav2Vec2FeatureExtractor, Wav2Vec2Model

from avatarstream.models.liveavatar.audio_features import CNN_RATE, FEATURE_RATE, SAMPLE_RATE, bucket_indices, hidden_states, normalize
from avatarstream.pipeline.audio_window import AudioWindow
from avatarstream.pipeline.chunks import Chunk, FrameLayout
from avatarstream.pipeline.stage import Stage
from avatarstream.pipeline.state import StageContext
from avatarstream.runtime.devices import upload
from avatarstream.runtime.module import Module
from avatarstream.stages.common import device_and_dtype
from avatarstream.stages.seeding import seeded_noise


def cnn_frames(samples: int) -> int:
    """wav2vec2's 50 Hz frames for ``samples`` (its conv stack: 400-sample receptive field, 320-sample hop)."""
    return max(0, (samples - 400) // 320 + 1)


def interpolate_rows(states: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
    """Linear interpolation of [layers, n, hidden] at fractional row ``positions`` (clamped to the rows there are)."""
    positions = positions.clamp(0, states.shape[1] - 1)
    low = positions.floor().long()
    high = (low + 1).clamp(max=states.shape[1] - 1)
    frac = (positions - low).to(states.dtype)[None, :, None]
    return states[:, low] * (1 - frac) + states[:, high] * frac


class LiveAvatarAudioStage(Stage):
    name = "context_gen"
    phase = "chunk"
    reads = ("chunk", "audio")
    writes = ("audio_features", "noise")

    def __init__(
        self,
        audio_module: Module,
        extractor: Wav2Vec2FeatureExtractor,
        frames: FrameLayout,
        latent_shape: tuple[int, int, int],
        *,
        fps: int,
        window_s: float,
        lookahead_frames: int,
    ) -> None:
        if window_s <= 0 or lookahead_frames < 0:
            raise ValueError("need window_s > 0 and lookahead_frames >= 0")
        self.audio_module = audio_module  # the wav2vec2 network; ``extractor`` is its processor (normalisation)
        self.extractor = extractor
        self.frames = frames
        self.latent_shape = latent_shape
        self.fps = fps
        self.window_frames = math.ceil(window_s * fps)
        self.lookahead_frames = lookahead_frames

    def modules(self) -> tuple[Module, ...]:
        return (self.audio_module,)

    def audio_context_frames(self) -> tuple[int, int]:
        return (self.window_frames, self.lookahead_frames)

    def features(self, audio: AudioWindow, first: int, end: int) -> torch.Tensor:
        """The DiT's audio input for video frames [first, end): [1, layers, hidden, end - first]."""
        device, dtype = device_and_dtype(self.audio_module)
        total = audio.total_frames
        stop = end + self.lookahead_frames if total is None else min(end + self.lookahead_frames, total)  # a file has no silence after it
        start = max(0, stop - self.window_frames)
        rows = bucket_indices(first, end - first, self.fps)
        offset_50hz = start * SAMPLE_RATE // self.fps / 320  # the window's first 50 Hz frame, in file frames
        if total is None:  # live: row r lies at r / 30 s
            positions = rows.double() * CNN_RATE / FEATURE_RATE
            valid = rows >= 0
        else:  # a finished file: the reference's resampling spans the file exactly, and rows past its end read zeros
            n50 = cnn_frames(total * SAMPLE_RATE // self.fps)
            n30 = n50 * FEATURE_RATE // CNN_RATE
            positions = rows.double() * (n50 - 1) / max(n30 - 1, 1)
            valid = (rows >= 0) & (rows < n30)
        if valid.any():
            samples = audio.read(start, stop).astype(np.float32)
        else:  # a block wholly after the file's end hears nothing, and its window may lie before what the timeline kept
            samples = np.zeros((stop - start) * audio.samples_per_frame, np.float32)
        values = normalize(self.extractor, samples).to(device)
        states = hidden_states(self.audio_module.network_as(Wav2Vec2Model), values.to(dtype)).float()
        # rows and mask go to the device: a host index or mask of a device tensor is copied up blocking (and a host
        # tensor in its arithmetic is an error on a GPU); a mask there with one value is a masked_fill, no sync
        out = interpolate_rows(states, upload(positions - offset_50hz, device))
        out[:, ~upload(valid, device)] = 0  # frames before the audio (dropped by the decoder) and after its end hear nothing
        return out.transpose(1, 2)[None]

    def run(self, ctx: StageContext) -> None:
        chunk: Chunk = ctx["chunk"]
        end = self.frames.video_start(chunk.window_end)
        # the model makes 4 frames per latent frame; of the first block the decoder drops the first 3, which lie before 0
        ctx["audio_features"] = self.features(ctx["audio"], end - self.frames.stride * chunk.window_frames, end)
        device, _ = device_and_dtype(self.audio_module)
        channels, height, width = self.latent_shape
        ctx["noise"] = seeded_noise((1, channels, chunk.window_frames, height, width), device, ctx.seed, "block", chunk.index)
