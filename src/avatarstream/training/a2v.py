"""A2V trainer: flow matching on base latents of talking clips, conditioned like inference.

Two kinds of training windows, matching `stages/audio_to_video.py` and the
chunk plan exactly:

* N-chunk: ``motion_frames`` conditioning frames then ``chunk_frames`` new
  ones; the conditioning is the clip's own previous frames (lightly noised,
  because at inference they are the model's own output), or for a clip's
  first chunk the reference latent repeated.
* I-chunk: ``interp_frames + 2`` frames with anchors at both ends; the frames
  between are generated.

The audio encoder and reference encoder train jointly with the DiT; the text
encoder stays as initialised and sees the empty prompt (the demo has no text
data). The loss covers only generated positions, as only those are kept.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor, nn
from torch.optim.swa_utils import AveragedModel, get_ema_multi_avg_fn

from avatarstream.models.demo import A2VDiT, AudioEncoder, ReferenceEncoder
from avatarstream.training.latents import LatentSet
from avatarstream.training.losses import flow_times, weighted_error
from avatarstream.training.schedule import optimizer, step


@dataclass(frozen=True)
class ChunkGeometry:
    chunk_frames: int = 12
    interp_frames: int = 3
    motion_frames: int = 2
    first_chunk_share: float = 0.15
    cond_noise: float = 0.2
    """Conditioning frames get Gaussian noise of std U(0, cond_noise): inference feeds back generated latents."""


@dataclass
class ChunkBatch:
    x0: Tensor  # [B, C, T, h, w]
    cond_mask: Tensor  # [B, T] 1 = conditioning frame
    audio: Tensor  # [B, S] samples for frames [start - before, start + T + after)
    reference: Tensor  # [B, C, h, w] base reference latents


def sample_chunks(data: LatentSet, kind: str, batch: int, geometry: ChunkGeometry, audio_context: tuple[int, int],
                  samples_per_frame: int, generator: torch.Generator) -> ChunkBatch:
    """A batch of N- or I-chunk windows from random clips (all of one kind, so one window length)."""
    g = geometry
    window = g.motion_frames + g.chunk_frames if kind == "N" else g.interp_frames + 2
    cond_positions = list(range(g.motion_frames)) if kind == "N" else [0, g.interp_frames + 1]
    before, after = audio_context
    xs, audios = [], []
    clips = torch.randint(len(data.base), (batch,), generator=generator)
    for clip in clips.tolist():
        latents, samples = data.base[clip].float(), data.audio[clip]
        frames = latents.shape[1]
        first = kind == "N" and torch.rand((), generator=generator).item() < g.first_chunk_share
        if first:
            start = -g.motion_frames
            ref = data.reference_base[clip][:, None].expand(-1, g.motion_frames, -1, -1)
            x = torch.cat([ref, latents[:, :g.chunk_frames]], dim=1)
        else:
            start = int(torch.randint(frames - window + 1, (), generator=generator))
            x = latents[:, start:start + window]
        xs.append(x)
        audios.append(_audio_window(samples, (start - before) * samples_per_frame,
                                    (start + window + after) * samples_per_frame))
    mask = torch.zeros(batch, window)
    mask[:, cond_positions] = 1.0
    return ChunkBatch(torch.stack(xs), mask, torch.stack(audios), data.reference_base[clips].float())


def _audio_window(samples: Tensor, begin: int, end: int) -> Tensor:
    """samples[begin:end] with zeros outside the clip (the pipeline pads the same way)."""
    out = torch.zeros(end - begin)
    lo, hi = max(begin, 0), min(end, len(samples))
    if hi > lo:
        out[lo - begin:hi - begin] = samples[lo:hi]
    return out


class A2VModels(nn.Module):
    """The modules trained together (one optimiser, one EMA)."""

    def __init__(self, dit: A2VDiT, audio_encoder: AudioEncoder, reference_encoder: ReferenceEncoder) -> None:
        super().__init__()
        self.dit = dit
        self.audio_encoder = audio_encoder
        self.reference_encoder = reference_encoder


def flow_loss(models: A2VModels, chunk: ChunkBatch, text: Tensor, geometry: ChunkGeometry, shift: float,
              generator: torch.Generator) -> Tensor:
    device = text.device
    x0 = chunk.x0.to(device)
    b = x0.shape[0]
    noise = torch.randn(x0.shape, generator=generator).to(device)
    t = flow_times(b, shift, generator).to(device)
    tt = t[:, None, None, None, None]
    x_t = (1 - tt) * x0 + tt * noise
    cond_mask = chunk.cond_mask.to(device)
    mask5 = cond_mask[:, None, :, None, None]
    sigma = torch.rand(b, generator=generator)[:, None, None, None, None].to(device) * geometry.cond_noise
    cond = (x0 + sigma * torch.randn(x0.shape, generator=generator).to(device)) * mask5
    audio = models.audio_encoder(chunk.audio.to(device))
    reference = models.reference_encoder(chunk.reference.to(device))
    v = models.dit(x_t, cond, cond_mask, t, audio, text.expand(b, -1, -1), reference)
    return weighted_error(v, noise - x0, mask=1 - mask5)


def train_a2v(models: A2VModels, data: LatentSet, text: Tensor, steps: int, seed: int, *, samples_per_frame: int,
              geometry: ChunkGeometry = ChunkGeometry(), batch: int = 8, lr: float = 5e-4, shift: float = 3.0,
              ema_decay: float = 0.99, log: Callable[[int, dict[str, float]], None] | None = None) -> dict[str, float]:
    """Every third step trains I-chunks (twice the batch: they are shorter); ends with the EMA weights."""
    models.train().requires_grad_(True)
    params = list(models.parameters())
    opt, sched = optimizer(params, lr, steps)
    ema = AveragedModel(models, multi_avg_fn=get_ema_multi_avg_fn(ema_decay))
    generator = torch.Generator().manual_seed(seed)
    context = (models.audio_encoder.frames_before, models.audio_encoder.frames_after)
    recent: dict[str, list[float]] = {"N": [], "I": []}
    for i in range(steps):
        kind = "I" if i % 3 == 2 else "N"
        chunk = sample_chunks(data, kind, batch * (2 if kind == "I" else 1), geometry, context, samples_per_frame, generator)
        loss = flow_loss(models, chunk, text, geometry, shift, generator)
        step(opt, sched, loss, params)
        ema.update_parameters(models)
        recent[kind] = (recent[kind] + [loss.item()])[-50:]
        if log is not None:
            log(i, {f"loss_{k}": sum(v) / len(v) for k, v in recent.items() if v})
    models.load_state_dict(ema.module.state_dict())
    models.eval().requires_grad_(False)
    return {f"loss_{k}": sum(v) / len(v) for k, v in recent.items() if v}
