"""Final stage Decode at the reference fidelity: each chunk's window decoded anew, as the authors' CLI does.

Each chunk's window is decoded whole with a fresh cache and colour-corrected
towards the reference image, and its frames become uint8 by truncation, as
the CLI's writer does. The streaming fidelity decodes causally with the
decode stage every Wan-based family shares (``stages.wan_decode``).
"""

from __future__ import annotations

import torch
from diffusers.models.autoencoders.autoencoder_kl_wan import AutoencoderKLWan

from avatarstream.components.wan.color_match import match_colors
from avatarstream.components.wan.vae import DecoderCache, decode
from avatarstream.pipeline.chunks import FrameLayout
from avatarstream.pipeline.stage import Stage
from avatarstream.pipeline.state import StageContext
from avatarstream.runtime.module import Module
from avatarstream.stages.common import device_and_dtype


def decode_window(vae: AutoencoderKLWan, latents: torch.Tensor, reference: torch.Tensor, strength: float, frames: slice) -> torch.Tensor:
    """The ``frames`` of one chunk window decoded whole with a fresh cache, clamped, colour-corrected towards ``reference``:
    float32 [1, 3, F, H, W] on the VAE's device. Only those frames are corrected (frame by frame, so exactly as in the whole window)."""
    video = decode(vae, latents, DecoderCache.for_vae(vae)).float()
    return match_colors(video[:, :, frames], reference, strength)


def truncated_frames(video: torch.Tensor) -> torch.Tensor:
    """[1, 3, T, H, W] in [-1, 1] -> uint8 [T, H, W, 3] as the reference's writer makes them: ((v + 1) / 2) * 255, clipped, truncated."""
    pixels = (((video[0] + 1) / 2) * 255).clamp(0, 255).to(torch.uint8)
    return pixels.permute(1, 2, 3, 0).contiguous()


class WanWindowDecodeStage(Stage):
    """Decode at the reference fidelity: the piece's whole chunk window, decoded anew, its piece's frames kept."""

    name = "decode"
    phase = "final"
    reads = ("window_latents", "window_offset", "frames_range", "reference_pixels")
    writes = ("frames",)

    def __init__(self, vae: Module, frames: FrameLayout, strength: float) -> None:
        self.vae = vae
        self.frames = frames
        self.strength = strength

    def modules(self) -> tuple[Module, ...]:
        return (self.vae,)

    def run(self, ctx: StageContext) -> None:
        _, dtype = device_and_dtype(self.vae)
        window = ctx["window_latents"]
        start, end = ctx["frames_range"]
        window_start = start - ctx["window_offset"]
        first = self.frames.window_video_range(window_start, window_start + window.shape[2])[0]
        a, b = self.frames.video_range(start, end)
        video = decode_window(self.vae.network_as(AutoencoderKLWan), window.to(dtype), ctx["reference_pixels"], self.strength, slice(a - first, b - first))
        ctx["frames"] = truncated_frames(video)
