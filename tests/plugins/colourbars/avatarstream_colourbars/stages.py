"""Three stages: the reference's tint (init), a block of latents with a causal loudness cache (chunk), pixels (final)."""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from avatarstream.plugin import Module, Stage, StageContext, image_to_video_tensor, video_to_frames
from avatarstream_colourbars.network import LATENT_STRIDE, Painter
from avatarstream_colourbars.strategy import PaintsFrames

HUES = torch.tensor([[1, 1, 1], [1, 1, -1], [-1, 1, 1], [-1, 1, -1], [1, -1, 1], [1, -1, -1], [-1, -1, 1], [-1, -1, -1]], dtype=torch.float32)


class TintStage(Stage):
    """The reference image's mean colour, once per request: every bar is mixed with it."""

    name = "tint"
    phase = "init"
    reads = ("reference_image",)
    writes = ("tint",)

    def run(self, ctx: StageContext) -> None:
        ctx["tint"] = image_to_video_tensor(ctx["reference_image"], torch.device("cpu")).mean(dim=(0, 2, 3, 4))


class BarsStage(Stage):
    """One block of latents: bars that scroll with the timeline and pulse with the audio's loudness.

    The loudness is smoothed across blocks, so the stage keeps the last
    smoothed value as its cache: one number, which is all it needs to resume.
    """

    name = "bars"
    phase = "chunk"
    role = "generate"
    reads = ("chunk", "audio", "tint")
    writes = ("latents",)
    resumes_with_cache = True  # one number

    def __init__(self, painter: Module, frames: PaintsFrames, bars: int, latent_size: tuple[int, int], samples_per_frame: int) -> None:
        self.painter = painter
        self.frames = frames  # all here, or over a --parallel frames=N group
        self.bars = bars
        self.latent_size = latent_size  # (height, width)
        self.samples_per_frame = samples_per_frame

    def modules(self) -> tuple[Module, ...]:
        return (self.painter,)

    def run(self, ctx: StageContext) -> None:
        chunk = ctx["chunk"]
        samples = ctx["audio"].read(chunk.window_start, chunk.window_end).reshape(chunk.window_frames, self.samples_per_frame)
        smoothed = ctx.cache if ctx.cache is not None else torch.zeros(1)
        loudness = []
        for rms in np.sqrt((samples.astype(np.float64) ** 2).mean(axis=1)):
            smoothed = 0.5 * smoothed + 0.5 * min(float(rms) * 4, 1.0)
            loudness.append(smoothed)
        ctx.cache = smoothed
        height, width = self.latent_size
        frames = torch.arange(chunk.window_start, chunk.window_end)
        column = (torch.arange(width)[None, :] * self.bars // width + frames[:, None]) % len(HUES)  # [T, w]: bars scroll by a column a frame
        colours = 0.7 * HUES[column] + 0.3 * ctx["tint"]  # [T, w, 3]
        rgb = colours.permute(2, 0, 1)[:, :, None, :].expand(3, chunk.window_frames, height, width)
        level = torch.cat(loudness)[None, :, None, None].expand(1, chunk.window_frames, height, width)
        pattern = torch.cat([rgb, level])[None].to(self.painter.network.inp.weight.device)
        ctx["latents"] = self.frames(self.painter.network_as(Painter), pattern)


class PixelsStage(Stage):
    """Latents to uint8 frames at the output size."""

    name = "pixels"
    phase = "final"
    reads = ("latents",)
    writes = ("frames",)

    def run(self, ctx: StageContext) -> None:
        latents = ctx["latents"]
        video = F.interpolate(latents, scale_factor=(1, LATENT_STRIDE, LATENT_STRIDE), mode="nearest")
        ctx["frames"] = video_to_frames(video)  # the pipeline reads frames to the host itself, once per stretch
