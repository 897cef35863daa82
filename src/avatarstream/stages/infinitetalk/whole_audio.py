"""Chunk stage ContextGen at the reference fidelity: the whole file's features, one generator drawing in the CLI's order.

The authors' CLI loudness-normalises the whole file, runs wav2vec2 over it
once (its own frame count rule), and seeds one generator once, from which
each chunk draws its noise and, after the first, one draw per step (and one
before) for the motion latents it overwrites at once: those draws only
advance the generator, but the next chunk's noise depends on them. This stage
does the same, so its features and noise are the reference's. It reads the
whole audio first and holds the file's features in host memory (12 layers x
768 float32 per video frame for chinese-wav2vec2-base: 37 KB, 3.3 GB per hour
of audio), so this fidelity is for files, not live sessions.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from transformers import Wav2Vec2Model

from avatarstream.errors import InputError
from avatarstream.models.infinitetalk.audio_features import FPS, SAMPLE_RATE, audio_windows, loudness_normalize, reference_feature_frames, wav2vec2_features
from avatarstream.pipeline.audio_window import AudioWindow
from avatarstream.pipeline.chunks import Chunk, FrameLayout
from avatarstream.pipeline.stage import Stage
from avatarstream.pipeline.state import StageContext
from avatarstream.runtime.module import Module
from avatarstream.stages.common import device_and_dtype


@dataclass
class WholeAudio:
    """What the stage keeps for the session: the file's features and the one generator."""

    features: torch.Tensor  # [frames, layers, hidden]
    generator: torch.Generator


class WanWholeAudioContextStage(Stage):
    name = "context_gen"
    phase = "chunk"
    reads = ("chunk", "audio", "reference_latent")
    writes = ("audio_windows", "noise")
    needs_whole_audio = True

    def __init__(self, audio_encoder: Module, frames: FrameLayout, steps: int) -> None:
        self.audio_encoder = audio_encoder
        self.frames = frames
        self.steps = steps

    def modules(self) -> tuple[Module, ...]:
        return (self.audio_encoder,)

    def _whole_audio(self, audio: AudioWindow, window_frames: int, seed: int, noise_device: torch.device) -> WholeAudio:
        """The file's features, and the generator every chunk's noise comes from: on the run's device, as the reference
        draws on its DiT's (the CUDA generator on a GPU)."""
        track = audio.track
        if track.first != 0:
            raise InputError("the reference fidelity encodes the audio from its start; it cannot resume a session part-way")
        samples = loudness_normalize(track.read(0, track.end)[0], SAMPLE_RATE)
        count = reference_feature_frames(samples.shape[-1])
        if count <= window_frames:
            raise InputError(
                f"the reference fidelity needs more than one chunk of audio ({window_frames + 1} frames, "
                f"{(window_frames + 1) / FPS:.2f} s at {FPS} fps), as the reference CLI does; this audio gives {count} frames"
            )
        device, _ = device_and_dtype(self.audio_encoder)
        features = wav2vec2_features(self.audio_encoder.network_as(Wav2Vec2Model), torch.from_numpy(samples).to(device), frames=count)
        return WholeAudio(features.float().cpu(), torch.Generator(device=noise_device).manual_seed(seed))

    def run(self, ctx: StageContext) -> None:
        chunk: Chunk = ctx["chunk"]
        first, end = self.frames.window_video_range(chunk.window_start, chunk.window_end)
        reference = ctx["reference_latent"]  # on the run's device
        held: WholeAudio = ctx.cache if ctx.cache is not None else self._whole_audio(ctx["audio"], end - first, ctx.seed, reference.device)
        ctx.cache = held
        ctx["audio_windows"] = audio_windows(held.features, first, end - first)
        _, channels, _, height, width = reference.shape
        draw = held.generator
        ctx["noise"] = torch.randn((1, channels, chunk.window_frames, height, width), generator=draw, device=draw.device)
        if chunk.index > 0:  # the motion latents' noise: drawn and dropped, as the reference does, to keep its sequence
            for _ in range(self.steps + 1):
                torch.randn((channels, len(chunk.cond_positions), height, width), generator=draw, device=draw.device)
