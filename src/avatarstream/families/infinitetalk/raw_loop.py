"""The baseline for the infinitetalk family: its networks called in a plain hand-written loop.

No stages, runtime, observers or audio timeline: the chunk geometry (N-chunks
only, the family's default) and the model calls on audio already in memory.
The frames must match the pipeline's bit for bit.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import torch

from avatarstream.components.wan.config import VAE_SPATIAL_STRIDE
from avatarstream.components.wan.frames import FRAMES
from avatarstream.components.wan.vae import DecoderCache, decode, encode
from avatarstream.families.infinitetalk.networks import InfiniteTalkNetworks
from avatarstream.families.infinitetalk.presets import NEGATIVE_PROMPT, Preset, check_geometry
from avatarstream.models.infinitetalk.audio_features import audio_windows, loudness_normalize, wav2vec2_features
from avatarstream.models.infinitetalk.config import AUDIO_WINDOW
from avatarstream.models.infinitetalk.predict import ChunkConditions, DiTPredictor
from avatarstream.models.infinitetalk.sampler import Guidance, sample, timesteps
from avatarstream.stages.common import image_to_video_tensor, video_to_frames
from avatarstream.stages.infinitetalk.reference import conditioning_channels
from avatarstream.stages.seeding import seeded_noise


@torch.inference_mode()
def raw_frames(n: InfiniteTalkNetworks, s: Preset, fps: int, reference_image: np.ndarray, samples: np.ndarray, *, seed: int = 0) -> Iterator[np.ndarray]:
    """The frames of settings ``s`` at ``fps`` from networks ``n`` called in a plain loop (N-chunks only)."""
    assert s.interp_frames == 0, "the baseline loop runs N-chunks only"
    assert n.text_encoder is not None and n.image_encoder is not None
    own, motion, _ = check_geometry(s.chunk_frames, s.motion_frames, 0)
    spf, total = 16000 // fps, round(len(samples) / 16000 * fps)
    schedule, guidance = timesteps(s.steps, s.shift), Guidance(s.text_guidance, s.audio_guidance)
    window_frames = round(s.audio_window_s * fps)

    pixels = image_to_video_tensor(reference_image, torch.device("cpu"))
    first_latent = encode(n.vae, pixels)
    y = conditioning_channels(n.vae, pixels, 1 + 4 * (own + motion - 1))
    clip = n.image_encoder.encode(pixels[:, :, 0])
    context, null = n.text_encoder.encode(["", NEGATIVE_PROMPT])
    width, height = s.size
    cache, previous = DecoderCache.for_vae(n.vae), None
    positions: tuple[int, ...]  # latent frames held clean: the reference's, then the motion frames
    k = 0
    while k == 0 or k * own + motion < FRAMES.timeline_frames(total):
        start = k * own
        first, end = FRAMES.window_video_range(start, start + own + motion)
        stop = min(end + s.audio_lookahead, total)
        lo = max(0, min(stop - window_frames, first - AUDIO_WINDOW // 2))
        features = wav2vec2_features(n.audio_encoder, torch.from_numpy(loudness_normalize(samples[lo * spf : stop * spf])))
        cond = ChunkConditions(y, clip, context[None], null[None], audio_windows(features, first - lo, end - first))
        noise = seeded_noise(
            (1, n.vae.config["z_dim"], own + motion, height // VAE_SPATIAL_STRIDE, width // VAE_SPATIAL_STRIDE), torch.device("cpu"), seed, "chunk", "N", k
        )
        if previous is None:
            held, positions = first_latent, (0,)
        else:
            tail = previous[:, :, -motion:]
            held = encode(n.vae, decode(n.vae, tail, DecoderCache.for_vae(n.vae))) if s.motion == "reencode" else tail
            positions = tuple(range(motion))
        latents = sample(DiTPredictor(n.dit, cond), noise.float(), held.float(), schedule, guidance, positions=positions)
        published = latents if k == 0 else latents[:, :, motion:]
        frames = video_to_frames(decode(n.vae, published, cache).float()).cpu().numpy()
        done = FRAMES.video_start(start + (0 if k == 0 else motion))
        yield frames[: max(total - done, 0)]
        previous, k = latents, k + 1
