"""A2V trainer: flow matching on base latents of talking clips, conditioned like inference.

Two kinds of training windows, matching `stages/demo/audio_to_video.py` and the
chunk plan exactly:

* N-chunk: ``motion_frames`` conditioning frames then ``chunk_frames`` new
  ones; the conditioning is the clip's own previous frames (lightly noised,
  because at inference they are the model's own output), or for a clip's
  first chunk the reference latent repeated. Part of the windows take it from
  the model's own rollouts instead (`rollout.py`), as inference does.
* I-chunk: ``interp_frames + 2`` frames with anchors at both ends; the frames
  between are generated. Rollout I-windows are generated throughout.

The audio encoder and reference encoder train jointly with the DiT; the text
encoder stays as initialised and sees the empty prompt (the demo has no text
data). The loss covers only generated positions, as only those are kept.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor
from torch.optim.swa_utils import AveragedModel, get_ema_multi_avg_fn

from avatarstream.models.demo import FlowMatchEuler
from avatarstream.training.a2v_parts import A2VModels, ChunkGeometry
from avatarstream.training.latents import LatentSet
from avatarstream.training.losses import flow_times, weighted_error
from avatarstream.training.rollout import RolloutBuffer, RolloutSettings, sample_chains
from avatarstream.training.schedule import optimizer, step


@dataclass
class ChunkBatch:
    x0: Tensor  # [B, C, T, h, w] ground truth of the whole window
    cond: Tensor  # [B, C, T, h, w] what conditions it: ground truth, or generated frames at conditioning positions
    cond_mask: Tensor  # [B, T] 1 = conditioning frame
    audio: Tensor  # [B, S] samples for frames [start - before, start + T + after)
    reference: Tensor  # [B, C, h, w] base reference latents


def sample_chunks(
    data: LatentSet,
    kind: str,
    batch: int,
    geometry: ChunkGeometry,
    audio_context: tuple[int, int],
    samples_per_frame: int,
    generator: torch.Generator,
    rollouts: RolloutBuffer | None = None,
) -> ChunkBatch:
    """A batch of N- or I-chunk windows from random clips (all of one kind, so one window length).

    With `rollouts`, some windows take their conditioning from the model's own earlier chunks.
    """
    g = geometry
    window = g.motion_frames + g.chunk_frames if kind == "N" else g.interp_frames + 2
    cond_positions = list(range(g.motion_frames)) if kind == "N" else [0, g.interp_frames + 1]
    audio_of = WindowAudio(data, audio_context, samples_per_frame)
    xs, conds, audios, clips = [], [], [], []
    for _ in range(batch):
        generated = rollouts.draw(kind) if rollouts is not None else None
        if generated is not None and kind == "I":  # anchors and frames between from one generated chunk
            clip, start = generated.clip, generated.start
            x = cond = generated.frames.float()
        elif generated is not None:  # generated motion frames, then the clip's own frames
            clip, start = generated.clip, generated.start
            x = data.base[clip][:, start : start + window].float()
            cond = x.clone()
            cond[:, cond_positions] = generated.frames.float()
        else:
            clip = int(torch.randint(len(data.base), (), generator=generator))
            latents = data.base[clip]  # float16; only the window is converted
            if kind == "N" and torch.rand((), generator=generator).item() < g.first_chunk_share:
                start = -g.motion_frames
                ref = data.reference_base[clip][:, None].expand(-1, g.motion_frames, -1, -1).float()
                x = torch.cat([ref, latents[:, : g.chunk_frames].float()], dim=1)
            else:
                start = int(torch.randint(latents.shape[1] - window + 1, (), generator=generator))
                x = latents[:, start : start + window].float()
            cond = x
        xs.append(x)
        conds.append(cond)
        clips.append(clip)
        audios.append(audio_of(clip, start, window))
    mask = torch.zeros(batch, window)
    mask[:, cond_positions] = 1.0
    return ChunkBatch(torch.stack(xs), torch.stack(conds), mask, torch.stack(audios), data.reference_base[clips].float())


class WindowAudio:
    """The audio samples a window of frames [start, start + frames) needs, with the encoder's context."""

    def __init__(self, data: LatentSet, audio_context: tuple[int, int], samples_per_frame: int) -> None:
        self.data, self.context, self.samples_per_frame = data, audio_context, samples_per_frame

    def __call__(self, clip: int, start: int, frames: int) -> Tensor:
        before, after = self.context
        spf = self.samples_per_frame
        return _audio_window(self.data.audio[clip], (start - before) * spf, (start + frames + after) * spf)


def _audio_window(samples: Tensor, begin: int, end: int) -> Tensor:
    """samples[begin:end] with zeros outside the clip (the pipeline pads the same way)."""
    out = torch.zeros(end - begin)
    lo, hi = max(begin, 0), min(end, len(samples))
    if hi > lo:
        out[lo - begin : hi - begin] = samples[lo:hi]
    return out


def flow_loss(models: A2VModels, chunk: ChunkBatch, text: Tensor, cond_noise: float, shift: float, generator: torch.Generator) -> Tensor:
    device = text.device
    x0 = chunk.x0.to(device)
    b = x0.shape[0]
    noise = torch.randn(x0.shape, generator=generator).to(device)
    t = flow_times(b, shift, generator).to(device)
    tt = t[:, None, None, None, None]
    cond_mask = chunk.cond_mask.to(device)
    mask5 = cond_mask[:, None, :, None, None]
    given = torch.where(mask5 > 0, chunk.cond.to(device), x0)  # the sampler noises the conditioning there, not the truth
    x_t = (1 - tt) * given + tt * noise
    sigma = torch.rand(b, generator=generator)[:, None, None, None, None].to(device) * cond_noise
    cond = (chunk.cond.to(device) + sigma * torch.randn(x0.shape, generator=generator).to(device)) * mask5
    audio = models.audio_encoder(chunk.audio.to(device))
    reference = models.reference_encoder(chunk.reference.to(device))
    v = models.dit(x_t, cond, cond_mask, t, audio, text.expand(b, -1, -1), reference)
    scale = models.dit.loss_scale(cond_mask, t)  # I-chunk frames: equal weight at every noise level
    return weighted_error(v * scale, (noise - x0) * scale, mask=1 - mask5)


def train_a2v(
    models: A2VModels,
    data: LatentSet,
    text: Tensor,
    steps: int,
    seed: int,
    *,
    samples_per_frame: int,
    sampler: FlowMatchEuler,
    geometry: ChunkGeometry = ChunkGeometry(),
    rollout: RolloutSettings | None = RolloutSettings(),
    batch: int = 8,
    lr: float = 5e-4,
    shift: float = 3.0,
    ema_decay: float = 0.99,
    log: Callable[[int, dict[str, float]], None] | None = None,
) -> dict[str, float]:
    """Every third step trains I-chunks (twice the batch: they are shorter); ends with the EMA weights.

    With `rollout`, chains sampled by `sampler` refresh a buffer of generated conditioning every `rollout.every` steps.
    """
    models.train().requires_grad_(True)
    params = list(models.parameters())
    opt, sched = optimizer(params, lr, steps)
    ema = AveragedModel(models, multi_avg_fn=get_ema_multi_avg_fn(ema_decay))
    generator = torch.Generator().manual_seed(seed)
    context = (models.audio_encoder.frames_before, models.audio_encoder.frames_after)
    buffer = RolloutBuffer(rollout, seed) if rollout is not None else None
    window_audio = WindowAudio(data, context, samples_per_frame)
    recent: dict[str, list[float]] = {"N": [], "I": []}
    for i in range(steps):
        if buffer is not None and i >= buffer.settings.start * steps and i % buffer.settings.every == 0:
            models.eval()
            sample_chains(models, data, text, sampler, geometry, buffer.settings, window_audio, generator, buffer)
            models.train()
        kind = "I" if i % 3 == 2 else "N"
        chunk = sample_chunks(data, kind, batch * (2 if kind == "I" else 1), geometry, context, samples_per_frame, generator, buffer)
        cond_noise = geometry.anchor_noise if kind == "I" else geometry.cond_noise
        loss = flow_loss(models, chunk, text, cond_noise, shift, generator)
        step(opt, sched, loss, params)
        ema.update_parameters(models)
        recent[kind] = (recent[kind] + [loss.item()])[-50:]
        if log is not None:
            log(i, {f"loss_{k}": sum(v) / len(v) for k, v in recent.items() if v})
    models.load_state_dict(ema.module.state_dict())
    models.eval().requires_grad_(False)
    return {f"loss_{k}": sum(v) / len(v) for k, v in recent.items() if v}
