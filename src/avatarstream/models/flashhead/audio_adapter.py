"""FlashHead's audio adapter: each latent frame's wav2vec2 windows projected to a few tokens of the DiT's width.

Every video frame comes with a 5-frame window of wav2vec2 hidden states. The
first latent frame (one video frame) takes its whole window; each later latent
frame covers ``vae_stride`` video frames and takes the first frame's past half
(3 windows), the centre of the frames between, and the last frame's future half.
"""

from __future__ import annotations

import torch
from torch import nn

from avatarstream.models.flashhead.config import AUDIO_WINDOW, FlashHeadConfig


def latent_frame_windows(audio: torch.Tensor, group: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``audio`` [B, 1 + group n, 5, L, C] -> the first frame's [B, 1, 5, L, C] and each later latent frame's [B, n, group + 4, L, C]."""
    mid = AUDIO_WINDOW // 2
    later = audio[:, 1:].unflatten(1, (-1, group))  # [B, n, group, 5, L, C]
    parts = (later[:, :, :1, : mid + 1], later[:, :, 1:-1, mid : mid + 1], later[:, :, -1:, mid:])
    return audio[:, :1], torch.cat([p.flatten(2, 3) for p in parts], dim=2)


class AudioProjection(nn.Module):
    """Windows -> [B, latent frames, tokens, dim]: two ReLU projections, one to ``tokens`` x ``dim``, a LayerNorm."""

    def __init__(self, config: FlashHeadConfig) -> None:
        super().__init__()
        per_frame = config.audio_blocks * config.audio_channels
        self.group = config.vae_stride[0]
        self.tokens = config.audio_context_tokens
        self.proj1 = nn.Linear(AUDIO_WINDOW * per_frame, config.audio_intermediate_dim)
        self.proj1_vf = nn.Linear((AUDIO_WINDOW + self.group - 1) * per_frame, config.audio_intermediate_dim)
        self.proj2 = nn.Linear(config.audio_intermediate_dim, config.audio_intermediate_dim)
        self.proj3 = nn.Linear(config.audio_intermediate_dim, self.tokens * config.audio_output_dim)
        self.norm = nn.LayerNorm(config.audio_output_dim)

    def forward(self, audio: torch.Tensor) -> torch.Tensor:
        first, later = latent_frame_windows(audio, self.group)
        hidden = torch.cat([torch.relu(self.proj1(first.flatten(2))), torch.relu(self.proj1_vf(later.flatten(2)))], dim=1)
        tokens = self.proj3(torch.relu(self.proj2(hidden)))
        return self.norm(tokens.unflatten(-1, (self.tokens, -1)))
