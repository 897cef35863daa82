"""The audio adapter's projection: per-pixel-frame wav2vec2 windows -> audio tokens per latent frame.

The first pixel frame (the reference frame) has its own 5-frame window; every
later latent frame covers 4 pixel frames, from which 8 window entries are
taken: the first frame's past and present (offsets -2, -1, 0), the present of
the two middle frames, and the last frame's present and future (0, +1, +2).
"""

from __future__ import annotations

import torch
from torch import nn

from avatarstream.components.wan.config import VAE_TEMPORAL_STRIDE
from avatarstream.models.infinitetalk.config import AUDIO_WINDOW, AdapterConfig


def group_by_latent_frame(audio: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """[B, 1+4(T-1), 5, blocks, channels] -> first frame [B, 1, 5*b*c], later frames [B, T-1, 8*b*c]."""
    pixel_frames = audio.shape[1]
    if (pixel_frames - 1) % VAE_TEMPORAL_STRIDE:
        raise ValueError(f"audio covers {pixel_frames} pixel frames; expected 1 + {VAE_TEMPORAL_STRIDE}k")
    mid = AUDIO_WINDOW // 2
    first = audio[:, :1].flatten(2)
    groups = audio[:, 1:].unflatten(1, (-1, VAE_TEMPORAL_STRIDE))  # [B, T-1, 4, 5, b, c]
    later = torch.cat(
        [groups[:, :, 0, : mid + 1], groups[:, :, 1:-1, mid], groups[:, :, -1, mid:]],
        dim=2,
    )  # [B, T-1, 8, b, c]
    return first, later.flatten(2)


class AudioProjection(nn.Module):
    """``audio_proj``: two input branches, a shared MLP, and a LayerNorm over each token."""

    def __init__(self, config: AdapterConfig) -> None:
        super().__init__()
        self.context_tokens = config.context_tokens
        self.output_dim = config.output_dim
        self.proj1 = nn.Linear(config.first_frame_inputs, config.intermediate_dim)
        self.proj1_vf = nn.Linear(config.later_frame_inputs, config.intermediate_dim)
        self.proj2 = nn.Linear(config.intermediate_dim, config.intermediate_dim)
        self.proj3 = nn.Linear(config.intermediate_dim, config.context_tokens * config.output_dim)
        self.norm = nn.LayerNorm(config.output_dim)

    def forward(self, audio: torch.Tensor) -> torch.Tensor:
        """[B, 1+4(T-1), 5, blocks, channels] -> tokens [B, T, context_tokens, output_dim]."""
        first, later = group_by_latent_frame(audio)
        hidden = torch.cat([torch.relu(self.proj1(first)), torch.relu(self.proj1_vf(later))], dim=1)
        tokens = self.proj3(torch.relu(self.proj2(hidden)))
        tokens = tokens.unflatten(-1, (self.context_tokens, self.output_dim))
        return self.norm(tokens.float()).type_as(tokens)
