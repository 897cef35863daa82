"""The demo family's benchmark code: its plain-loop baseline, its resolution sweep and its production size.

``DemoFamily`` exposes each as an optional member of the family interface
(``families/base.py``: ``raw_frames``, ``resolution_sweep``,
``production_model``), importing this module only when ``avatarstream bench``
asks for it.

The baseline calls the models in a plain hand-written loop: no stages,
runtime, observers or audio timeline, just the chunk geometry and the model
calls, on audio already in memory. The framework's overhead is the
pipeline's time over this loop's, measured in the same run; the frames must
match the pipeline's bit for bit, which proves both did the same work.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Mapping
from functools import partial
from typing import Any, Protocol, TypeVar

import numpy as np
import torch
import torch.nn.functional as F

from avatarstream.families.base import OptionsLike
from avatarstream.families.chunk_plan import ChunkPlan
from avatarstream.families.demo_options import MOTION_FRAMES, DemoOptions
from avatarstream.models.demo import AudioEncoder, CausalVAE, DemoConfig, FlowMatchEuler, TextEncoder
from avatarstream.pipeline.spec import PipelineSpec
from avatarstream.runtime.module import Module
from avatarstream.stages.common import image_to_video_tensor, video_to_frames
from avatarstream.stages.demo.audio_to_video import sample_window
from avatarstream.stages.seeding import seeded_noise


class DemoModel(Protocol):
    """What the benchmarks read of a demo family (``families.demo.DemoFamily``, which imports this module lazily)."""

    config: DemoConfig
    modules: dict[str, Module]

    def build(self, options: DemoOptions) -> PipelineSpec: ...


M = TypeVar("M")


def raw_frames(family: DemoModel, reference_image: np.ndarray, samples: np.ndarray, *, options: OptionsLike = None, seed: int = 0) -> Iterator[np.ndarray]:
    """The frames ``options`` make (the settings the family's ``build`` resolves from them), from the models in a plain loop."""
    s: Mapping[str, Any] = family.build(DemoOptions.parse(options)).settings
    return _raw_loop(
        family, reference_image, samples, chunk_frames=s["chunk_frames"], interp_frames=s["interp_frames"], steps=s["steps"], shift=s["shift"], seed=seed
    )


@torch.inference_mode()
def _raw_loop(
    family: DemoModel, reference_image: np.ndarray, samples: np.ndarray, *, chunk_frames: int, interp_frames: int, steps: int, shift: float, seed: int = 0
) -> Iterator[np.ndarray]:
    cfg = family.config
    net = {name: module.network for name, module in family.modules.items()}
    vae = family.modules["vae"].network_as(CausalVAE)
    text_encoder = family.modules["text_encoder"].network_as(TextEncoder)
    audio_encoder = family.modules["audio_encoder"].network_as(AudioEncoder)
    device = next(net["a2v_dit"].parameters()).device
    spf, total = cfg.samples_per_frame, round(len(samples) / cfg.sample_rate * cfg.fps)
    sampler = FlowMatchEuler(steps, shift)

    full = image_to_video_tensor(reference_image, device)
    base = F.interpolate(full[:, :, 0], size=(cfg.base_size, cfg.base_size), mode="area")[:, :, None]
    ref_full, ref_base = vae.encode(full)[:, :, 0], vae.encode(base)[:, :, 0]
    ref_tokens = net["reference_encoder"](ref_base)
    text = text_encoder(text_encoder.tokenize("").to(device))
    before, after = audio_encoder.frames_before, audio_encoder.frames_after
    n_latents: dict[int, tuple[int, torch.Tensor]] = {}
    cache = None

    def timeline_frame(f: int) -> torch.Tensor:
        start, lat = next(v for v in n_latents.values() if 0 <= f - v[0] - MOTION_FRAMES < v[1].shape[2] - MOTION_FRAMES)
        return lat[:, :, f - start : f - start + 1]

    for chunk in ChunkPlan(chunk_frames, interp_frames, MOTION_FRAMES).schedule(total):
        lo, hi = (chunk.window_start - before) * spf, (chunk.window_end + after) * spf
        window = np.zeros(hi - lo, np.float32)
        window[max(-lo, 0) : max(-lo, 0) + len(samples[max(lo, 0) : max(hi, 0)])] = samples[max(lo, 0) : max(hi, 0)]
        audio = audio_encoder(torch.from_numpy(window)[None].to(device))
        noise = seeded_noise(
            (1, cfg.vae.latent_channels, chunk.window_frames, cfg.base_latent_size, cfg.base_latent_size), device, seed, "chunk", chunk.kind, chunk.index
        )
        positions = list(chunk.cond_positions)
        if chunk.kind == "N" and chunk.index == 0:
            conditioning = ref_base[:, :, None].expand(-1, -1, len(positions), -1, -1)
        else:
            conditioning = torch.cat([timeline_frame(f) for f in chunk.cond_frames], dim=2)
        latents = sample_window(net["a2v_dit"], sampler, noise, conditioning, positions, audio, text, ref_tokens)
        if chunk.kind == "N":
            n_latents[chunk.index] = (chunk.window_start, latents)
            n_latents.pop(chunk.index - 2, None)
        for piece in chunk.publishes:
            clipped = piece.clipped(total)
            if clipped is None:
                continue
            source = latents if piece.source == (chunk.kind, chunk.index) else n_latents[piece.source[1]][1]
            low = source[:, :, clipped.offset : clipped.offset + clipped.end - clipped.start]
            sr_noise = seeded_noise((1, *ref_full.shape[1:2], 1, *ref_full.shape[2:]), device, seed, "sr").expand(-1, -1, low.shape[2], -1, -1)
            video, cache = vae.decode(net["sr_dit"](low, ref_full, sr_noise), cache)
            yield video_to_frames(video).cpu().numpy()


def resolution_sweep(base: DemoConfig, random: Callable[[DemoConfig], M]) -> list[tuple[int, Callable[[], M]]]:
    """Half, the same and one and a half times ``base``'s output size (square, px), each with the base DiT at half of it:
    the same model widths with larger latents, random weights (``random`` makes a model of a config)."""
    sizes = [base.image_size // 2, base.image_size, base.image_size * 3 // 2]
    return [(size, partial(random, dataclasses.replace(base, image_size=size, base_size=size // 2))) for size in sizes]


def production_config() -> DemoConfig:
    """A production-sized configuration: a ~1.4 B-parameter base DiT (Wan2.1-1.3B width, 24 blocks).

    Square frames (the demo family is square): 736x736 output (0.54 MP; 720p
    is 0.92 MP), base DiT at 368x368, i.e. a 46x46 latent lifted from 23x23.
    """
    base = DemoConfig()
    return dataclasses.replace(
        base,
        image_size=736,
        base_size=368,
        vae=dataclasses.replace(base.vae, encoder_channels=128, decoder_channels=256, decoder_up_channels=64),
        audio=dataclasses.replace(base.audio, dim=768, conv_channels=512, heads=12, layers=2),
        text=dataclasses.replace(base.text, dim=768, heads=12, layers=2),
        dit=dataclasses.replace(base.dit, dim=1536, layers=24, heads=12, mlp_ratio=3.0),
        sr=dataclasses.replace(base.sr, dim=512, layers=8, heads=8, mlp_ratio=4.0),
    )


def production_model(random: Callable[[DemoConfig], M]) -> M:
    """The demo architecture at production size (``production_config``), random weights (``random`` makes a model of a config)."""
    return random(production_config())
