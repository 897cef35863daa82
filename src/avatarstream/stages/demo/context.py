"""Chunk stage ContextGen: the chunk's audio features (bounded look-back) and its noise."""

from __future__ import annotations

import torch

from avatarstream.models.demo import AudioEncoder
from avatarstream.pipeline.stage import Stage
from avatarstream.pipeline.state import StageContext
from avatarstream.runtime.devices import upload
from avatarstream.runtime.module import Module
from avatarstream.stages.seeding import seeded_noise


class ContextGenStage(Stage):
    """Audio features for exactly the chunk's window, from that window plus the encoder's receptive field.

    Never the whole file: the audio read is ``frames_before + window + frames_after``.
    """

    name = "context_gen"
    phase = "chunk"
    reads = ("chunk", "audio")
    writes = ("audio_features", "noise")

    def __init__(self, audio_encoder: Module, latent_shape: tuple[int, int, int]) -> None:
        self.audio_encoder = audio_encoder
        self.latent_shape = latent_shape  # (channels, height, width) at base resolution

    def modules(self) -> tuple[Module, ...]:
        return (self.audio_encoder,)

    def audio_context_frames(self) -> tuple[int, int]:
        network = self.audio_encoder.network_as(AudioEncoder)
        return (network.frames_before, network.frames_after)

    def run(self, ctx: StageContext) -> None:
        chunk = ctx["chunk"]
        network = self.audio_encoder.network_as(AudioEncoder)
        device = next(network.parameters()).device
        samples = ctx["audio"].read(chunk.window_start - network.frames_before, chunk.window_end + network.frames_after)
        ctx["audio_features"] = network(upload(torch.from_numpy(samples)[None], device))
        channels, height, width = self.latent_shape
        shape = (1, channels, chunk.window_frames, height, width)
        ctx["noise"] = seeded_noise(shape, device, ctx.seed, "chunk", chunk.kind, chunk.index)
