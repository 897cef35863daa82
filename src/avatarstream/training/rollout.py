"""Rollouts: the model's own chunks, fed back as conditioning while it trains.

At inference every N-chunk after the first is conditioned on the previous
chunk's generated frames, and every I-chunk on two generated anchors. A model
trained only on ground-truth conditioning has never seen its own errors, so
they compound and the face drifts within seconds. Every few steps the trainer
therefore samples short chains of chunks with the current weights, exactly as
the pipeline does (same sampler, same chunk geometry), and keeps what the
next chunk would be conditioned on in a bounded buffer. Training windows
drawn from it pair that generated conditioning with the ground-truth frames
that follow, which teaches the model to pull back towards the reference and
the audio instead of copying its own drift forward.

I-chunks are different: their job is continuity with both anchors, and
ground-truth frames between generated anchors would teach them to jump away
from the anchors (measured: 3x the frame-to-frame change at each anchor).
Their rollout windows are therefore cut from inside one generated chunk,
anchors and frames between alike, so target and anchors always agree. On
its own this helped little (I-chunks still jumped at their anchors); what
made them meet their anchors is the residual from the anchors' blend
(`models/demo/bridge_hint.py`).
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor

from avatarstream.models.demo import FlowMatchEuler
from avatarstream.stages.demo.audio_to_video import sample_window
from avatarstream.training.a2v_parts import A2VModels, ChunkGeometry
from avatarstream.training.latents import LatentSet


@dataclass(frozen=True)
class RolloutSettings:
    share: float = 0.5
    """Share of N- and I-chunk windows conditioned on generated frames (once the buffer has some)."""
    start: float = 0.25
    """Fraction of the run before the first refresh: until the model makes faces, its rollouts teach nothing."""
    every: int = 12
    """Training steps between two refreshes of the buffer."""
    chains: int = 8
    """Chains sampled per refresh (one batch)."""
    depth: int = 3
    """Chunks per chain: errors of up to `depth` generated chunks in a row are seen."""
    from_reference: float = 0.3
    """Share of chains that start like a session does, from the reference instead of ground-truth frames."""
    capacity: int = 384
    """Entries kept per kind; the oldest (from older weights) go first."""


@dataclass(frozen=True)
class Conditioning:
    """Generated frames for the window of `clip` that starts at frame `start`."""

    clip: int
    start: int
    frames: Tensor  # [C, K, h, w] float16: the motion frames (N) or the whole window (I)


class RolloutBuffer:
    """Bounded store of generated conditioning for N-windows and I-windows."""

    def __init__(self, settings: RolloutSettings, seed: int) -> None:
        self.settings = settings
        self.n: deque[Conditioning] = deque(maxlen=settings.capacity)
        self.i: deque[Conditioning] = deque(maxlen=settings.capacity)
        self._random = random.Random(seed)

    def draw(self, kind: str) -> Conditioning | None:
        """A stored entry for a window of `kind` with probability `share`; None means use ground truth."""
        entries = self.n if kind == "N" else self.i
        if not entries or self._random.random() >= self.settings.share:
            return None
        return entries[self._random.randrange(len(entries))]

    def add(self, kind: str, clips: list[int], starts: list[int], frames: Tensor) -> None:
        entries = self.n if kind == "N" else self.i
        for clip, start, cond in zip(clips, starts, frames.half().cpu()):
            entries.append(Conditioning(clip, start, cond.clone()))


@torch.no_grad()
def sample_chains(
    models: A2VModels,
    data: LatentSet,
    text: Tensor,
    sampler: FlowMatchEuler,
    geometry: ChunkGeometry,
    settings: RolloutSettings,
    window_audio: Callable[[int, int, int], Tensor],
    generator: torch.Generator,
    buffer: RolloutBuffer,
) -> None:
    """Generates `settings.chains` chains of `settings.depth` N-chunks and stores N- and I-windows from them.

    `window_audio(clip, start, frames)` returns the audio samples a window needs (with its context).
    """
    g, s = geometry, settings
    m, length = g.motion_frames, g.chunk_frames
    window = m + length
    device = text.device
    clips = torch.randint(len(data.base), (s.chains,), generator=generator).tolist()
    starts, cond = [], []
    for clip in clips:
        frames = data.base[clip].shape[1]
        latest = frames - window - s.depth * length
        if latest < 0 or torch.rand((), generator=generator).item() < s.from_reference:
            starts.append(-m)
            cond.append(data.reference_base[clip].float()[:, None].expand(-1, m, -1, -1))
        else:
            start = int(torch.randint(latest + 1, (), generator=generator))
            starts.append(start)
            cond.append(data.base[clip][:, start : start + m].float())
    motion = torch.stack(cond).to(device)
    reference = models.reference_encoder(data.reference_base[clips].float().to(device))
    interp_window = g.interp_frames + 2
    for _ in range(s.depth):
        audio = models.audio_encoder(torch.stack([window_audio(c, st, window) for c, st in zip(clips, starts)]).to(device))
        noise = torch.randn(s.chains, motion.shape[1], window, *motion.shape[3:], generator=generator).to(device)
        latents = sample_window(models.dit, sampler, noise, motion, list(range(m)), audio, text.expand(s.chains, -1, -1), reference)
        generated = latents[:, :, m:]
        offset = int(torch.randint(length - interp_window + 1, (), generator=generator))
        buffer.add("I", clips, [st + m + offset for st in starts], generated[:, :, offset : offset + interp_window])
        starts = [st + length for st in starts]
        motion = generated[:, :, -m:]
        fits = [st + window <= data.base[c].shape[1] for c, st in zip(clips, starts)]
        keep = [i for i, ok in enumerate(fits) if ok]
        buffer.add("N", [clips[i] for i in keep], [starts[i] for i in keep], motion[keep])
