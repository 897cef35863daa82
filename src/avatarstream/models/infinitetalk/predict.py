"""The DiT as the sampler sees it: one batched forward for all guidance conditions of a step, or one each when memory is short."""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from avatarstream.models.infinitetalk.dit import InfiniteTalkDiT


@dataclass
class ChunkConditions:
    """What stays fixed over a chunk's steps (batch 1 each): y, CLIP features, prompt and negative prompt, audio windows."""

    y: torch.Tensor
    clip_fea: torch.Tensor
    context: torch.Tensor
    context_null: torch.Tensor
    audio: torch.Tensor


def _pad_text(context: torch.Tensor, length: int) -> torch.Tensor:
    return F.pad(context, (0, 0, 0, length - context.shape[1]))


class DiTPredictor:
    """Calls the DiT once per step with the conditions stacked on the batch, where memory allows.

    A step whose stacked forward runs out of device memory is redone one
    condition at a time, and so is every later step of the predictor (the
    same shapes would run out again). The latent is integrated in float32;
    the DiT runs in the dtype of ``y`` (bf16 on GPUs).
    """

    def __init__(self, dit: InfiniteTalkDiT, cond: ChunkConditions, *, batched: bool = True) -> None:
        self.dit = dit
        self.cond = cond
        self.text_len = dit.config.text_len
        self.batched = batched  # False once a stacked forward ran out of memory; callers carry it to the next chunk

    def __call__(self, latent: torch.Tensor, timestep: torch.Tensor, conditions: tuple[tuple[bool, bool], ...]) -> list[torch.Tensor]:
        if self.batched and len(conditions) > 1:
            try:
                return self._forward(latent, timestep, conditions)
            except torch.OutOfMemoryError:
                self.batched = False
                if torch.cuda.is_available():
                    torch.cuda.empty_cache()
        return [v for condition in conditions for v in self._forward(latent, timestep, (condition,))]

    def _forward(self, latent: torch.Tensor, timestep: torch.Tensor, conditions: tuple[tuple[bool, bool], ...]) -> list[torch.Tensor]:
        c, n = self.cond, len(conditions)
        dtype = self.cond.y.dtype
        latent = latent.to(dtype)
        texts = [_pad_text(c.context if text else c.context_null, self.text_len) for text, _ in conditions]
        audios = [c.audio if audio else torch.zeros_like(c.audio) for _, audio in conditions]
        out = self.dit(
            latent.expand(n, -1, -1, -1, -1),
            c.y.expand(n, -1, -1, -1, -1),
            timestep.expand(n),
            torch.cat(texts),
            c.clip_fea.expand(n, -1, -1),
            torch.cat(audios),
        )
        return list(out.float().split(1))
