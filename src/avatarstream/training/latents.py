"""Clips turned into what A2V and SR train on: base latents, SR pairs, reference latents, audio.

Encoded once with the trained (frozen) VAE, exactly as inference encodes:
the base latent of a frame is the VAE encoding of its 128x128 area-downsample.
Stored in float16 in memory (and optionally on disk) to keep the set small.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file, save_file

from avatarstream.models.demo import CausalVAE
from avatarstream.training.data import Clip, downsample, to_tensor


@dataclass
class LatentSet:
    base: list[torch.Tensor]  # per clip [C, T, h, w] float16
    audio: list[torch.Tensor]  # per clip [S] float32
    openness: list[torch.Tensor]  # per clip [T] (ground truth, for reports)
    reference_base: torch.Tensor  # [N, C, h, w]
    reference_full: torch.Tensor  # [N, C, 2h, 2w]
    sr_low: torch.Tensor  # [M, C, h, w] base latents of sampled frames
    sr_high: torch.Tensor  # [M, C, 2h, 2w] their full-resolution latents
    sr_clip: torch.Tensor  # [M] clip index of each SR pair

    def save(self, path: Path) -> None:
        """safetensors, never pickle: per-clip lists are stored as ``name.index`` tensors."""
        tensors: dict[str, torch.Tensor] = {}
        for name, value in self.__dict__.items():
            items = value if isinstance(value, list) else [value]
            prefix = name if isinstance(value, list) else f"{name}!"
            tensors.update({f"{prefix}.{i}": t.contiguous() for i, t in enumerate(items)})
        save_file(tensors, str(path))

    @classmethod
    def load(cls, path: Path) -> LatentSet:
        tensors = load_file(str(path))
        fields: dict[str, list[tuple[int, torch.Tensor]]] = {}
        for key, tensor in tensors.items():
            name, index = key.rsplit(".", 1)
            fields.setdefault(name, []).append((int(index), tensor))
        values = {name.rstrip("!"): [t for _, t in sorted(items, key=lambda it: it[0])] for name, items in fields.items()}
        kwargs: dict[str, Any] = {name: (v if name + "!" not in fields else v[0]) for name, v in values.items()}
        return cls(**kwargs)


@torch.no_grad()
def encode_clips(vae: CausalVAE, clips: Iterable[Clip], base_size: int, sr_every: int, batch: int = 32) -> LatentSet:
    """Encode every frame at base resolution and every `sr_every`-th frame at full resolution."""
    vae.eval()
    base, audio, openness, ref_base, ref_full, sr_low, sr_high, sr_clip = [], [], [], [], [], [], [], []

    def encode(video: torch.Tensor) -> torch.Tensor:  # [N, 3, H, W] -> [N, C, h, w]
        parts = [vae.encode(video[i : i + batch].transpose(0, 1)[None])[0].transpose(0, 1) for i in range(0, len(video), batch)]
        return torch.cat(parts)

    for index, clip in enumerate(clips):
        frames = to_tensor(clip.frames)
        low = encode(downsample(frames, base_size))
        picked = torch.arange(0, len(frames), sr_every)
        base.append(low.transpose(0, 1).half())
        audio.append(torch.from_numpy(clip.audio).float())
        openness.append(torch.from_numpy(clip.mouth.openness).float())
        reference = to_tensor(clip.reference)[None]
        ref_base.append(encode(downsample(reference, base_size))[0])
        ref_full.append(encode(reference)[0])
        sr_low.append(low[picked].half())
        sr_high.append(encode(frames[picked]).half())
        sr_clip.append(torch.full((len(picked),), index))
    return LatentSet(base, audio, openness, torch.stack(ref_base), torch.stack(ref_full), torch.cat(sr_low), torch.cat(sr_high), torch.cat(sr_clip))
