"""Chunk stage: each chunk's audio windows from the audio buffer the reference keeps, wav2vec2 run over all of it.

The reference's stream mode appends each chunk's audio to an ``audio_buffer_s``
ring buffer that starts as silence, normalises the whole buffer, runs
wav2vec2 over it and gives the chunk the windows of the buffer's last
``chunk_frames`` frames. Here the buffer is the audio track read back from the
chunk's last frame (silence before the start and after the end of a file, as
the reference's zero padding), so the features are the reference's and nothing
grows with the session. wav2vec2's attention and the normalisation span the
whole buffer, so the encoding cannot be carried from chunk to chunk without
changing the features: every chunk pays for ``audio_buffer_s`` seconds of wav2vec2.
"""

from __future__ import annotations

import numpy as np
from transformers import Wav2Vec2FeatureExtractor, Wav2Vec2Model

from avatarstream.models.flashhead.audio_features import frame_features, normalize, windows
from avatarstream.pipeline.chunks import Chunk
from avatarstream.pipeline.stage import Stage
from avatarstream.pipeline.state import StageContext
from avatarstream.runtime.module import Module
from avatarstream.stages.common import device_and_dtype


class FlashHeadAudioStage(Stage):
    name = "context_gen"
    phase = "chunk"
    reads = ("chunk", "audio")
    writes = ("audio_windows",)

    def __init__(self, audio_module: Module, extractor: Wav2Vec2FeatureExtractor, *, buffer_frames: int, chunk_frames: int) -> None:
        if buffer_frames < chunk_frames:
            raise ValueError(f"the audio buffer ({buffer_frames} frames) must hold a chunk ({chunk_frames} frames)")
        self.audio_module = audio_module  # wav2vec2; ``extractor`` is its processor (the buffer's normalisation)
        self.extractor = extractor
        self.buffer_frames = buffer_frames
        self.chunk_frames = chunk_frames

    def modules(self) -> tuple[Module, ...]:
        return (self.audio_module,)

    def audio_context_frames(self) -> tuple[int, int]:
        return (self.buffer_frames, 0)

    def run(self, ctx: StageContext) -> None:
        chunk: Chunk = ctx["chunk"]
        device, _ = device_and_dtype(self.audio_module)
        end = chunk.window_end  # the buffer ends with the chunk's last new frame
        samples = ctx["audio"].read(end - self.buffer_frames, end).astype(np.float32)
        values = normalize(self.extractor, samples).to(device)
        features = frame_features(self.audio_module.network_as(Wav2Vec2Model), values, self.buffer_frames)
        ctx["audio_windows"] = windows(features, self.chunk_frames)
