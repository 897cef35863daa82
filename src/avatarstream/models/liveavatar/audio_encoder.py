"""The S2V DiT's audio encoder: a learned mix of wav2vec2's hidden states, then causal 1-D convolutions to tokens.

Per video frame it gets every hidden state of wav2vec2; the convolutions stride
by 4 in time, so it emits one set of tokens per latent frame: ``num_token``
local tokens plus a learned padding token (for the audio cross-attention), and
one global token (for the adaptive norm before it). Causal padding repeats the
first frame, which is why a block's audio is preceded by copies of its first
frame (``MOTION_FRAMES`` of them, as in training).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class CausalConv1d(nn.Module):
    """A 1-D convolution that sees only the past: left padding of kernel - 1 frames, replicating the first."""

    def __init__(self, channels_in: int, channels_out: int, kernel_size: int = 3, stride: int = 1) -> None:
        super().__init__()
        self.left = kernel_size - 1
        self.conv = nn.Conv1d(channels_in, channels_out, kernel_size, stride=stride)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(F.pad(x, (self.left, 0), mode="replicate"))


class AudioTokenEncoder(nn.Module):
    """[B, frames, audio_dim] -> local tokens [B, frames/4, num_token + 1, dim] and global [B, frames/4, 1, dim]."""

    def __init__(self, audio_dim: int, dim: int, num_token: int, need_global: bool) -> None:
        super().__init__()
        self.num_heads = num_token
        self.need_global = need_global
        self.conv1_local = CausalConv1d(audio_dim, dim // 4 * num_token, 3)
        if need_global:
            self.conv1_global = CausalConv1d(audio_dim, dim // 4, 3)
            self.final_linear = nn.Linear(dim, dim)
        self.conv2 = CausalConv1d(dim // 4, dim // 2, 3, stride=2)
        self.conv3 = CausalConv1d(dim // 2, dim, 3, stride=2)
        self.padding_tokens = nn.Parameter(torch.zeros(1, 1, 1, dim))

    def _trunk(self, x: torch.Tensor) -> torch.Tensor:
        """[N, C, T] after the first convolution -> [N, T/4, dim]: norm + SiLU around two strided convolutions."""
        for conv in (None, self.conv2, self.conv3):
            if conv is not None:
                x = conv(x)
            x = F.silu(F.layer_norm(x.transpose(1, 2), (x.shape[1],), eps=1e-6)).transpose(1, 2)
        return x.transpose(1, 2)

    def forward(self, features: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
        b = features.shape[0]
        x = features.transpose(1, 2)
        local = self.conv1_local(x)
        local = local.unflatten(1, (self.num_heads, -1)).flatten(0, 1)  # (b n) c t
        local = self._trunk(local).unflatten(0, (b, self.num_heads)).transpose(1, 2)  # b t n c
        local = torch.cat([local, self.padding_tokens.expand(b, local.shape[1], 1, -1).to(local.dtype)], dim=2)
        if not self.need_global:
            return local, None
        glob = self.final_linear(self._trunk(self.conv1_global(x)))
        return local, glob[:, :, None]


class CausalAudioEncoder(nn.Module):
    """wav2vec2 hidden states [B, layers, audio_dim, frames] -> audio tokens per latent frame (see ``AudioTokenEncoder``)."""

    def __init__(self, audio_dim: int, audio_layers: int, dim: int, num_token: int, need_global: bool) -> None:
        super().__init__()
        self.encoder = AudioTokenEncoder(audio_dim, dim, num_token, need_global)
        self.weights = nn.Parameter(torch.full((1, audio_layers, 1, 1), 0.01))

    def forward(self, features: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
        weights = F.silu(self.weights.float())
        mixed = ((features.float() * weights) / weights.sum(dim=1, keepdim=True)).sum(dim=1)  # b c t
        return self.encoder(mixed.transpose(1, 2).to(self.weights.dtype))
