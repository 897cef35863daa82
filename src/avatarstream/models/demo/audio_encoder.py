"""Audio encoder: log-mel -> valid 1D convs -> per-frame tokens -> windowed transformer.

Every video frame gets `tokens_per_frame` tokens that depend only on the audio
of frames [f - frames_before, f + frames_after]: the convolutions are "valid"
(no padding) and the transformer attends within a fixed window of frames
around each frame. So features are identical whether a range of frames is
computed in one call or in many, which lets the pipeline stream audio with a
bounded look-back.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from .config import DemoConfig
from .layers import EncoderLayer
from .mel import LogMel


class AudioEncoder(nn.Module):
    def __init__(self, cfg: DemoConfig) -> None:
        super().__init__()
        a = cfg.audio
        self.samples_per_frame = cfg.samples_per_frame
        self.tokens_per_frame = a.tokens_per_frame
        self.dim = a.dim
        self.mel_per_frame = a.mel_per_frame
        self.context = a.context_frames
        hop = self.samples_per_frame // a.mel_per_frame
        self.mel = LogMel(cfg.sample_rate, a.n_fft, a.win_length, hop, a.n_mels)

        convs: list[nn.Module] = []
        for i in range(a.conv_layers):
            convs += [nn.Conv1d(a.n_mels if i == 0 else a.conv_channels, a.conv_channels, 3), nn.GELU()]
        self.convs = nn.Sequential(*convs)
        self.receptive = 1 + 2 * a.conv_layers  # in mel frames
        self.centre = a.conv_layers  # conv output j describes mel frame j + centre

        self.to_tokens = nn.Linear(a.conv_channels * (a.mel_per_frame // a.tokens_per_frame), a.dim)
        window_tokens = (2 * self.context + 1) * a.tokens_per_frame
        self.position = nn.Parameter(torch.randn(window_tokens, a.dim) * 0.02)
        self.layers = nn.ModuleList(EncoderLayer(a.dim, a.heads) for _ in range(a.layers))
        self.norm = nn.LayerNorm(a.dim)

        # Receptive field in video frames: window frames, plus conv reach, plus one STFT.
        k = a.mel_per_frame
        self.frames_before = self.context + math.ceil(self.centre / k)
        right_samples = (k * self.context - 1 + self.receptive - 1 - self.centre) * hop + a.n_fft
        self.frames_after = math.ceil(right_samples / self.samples_per_frame)

    def forward(self, samples: Tensor) -> Tensor:
        """samples [B, S] of frames [f0 - frames_before, f1 + frames_after)
        -> features [B, f1 - f0, tokens_per_frame, dim]."""
        frames = self._frames(samples)
        k, w, hop = self.mel_per_frame, self.context, self.mel.hop_length
        # Mel frames needed: those owned by frames [f0 - w, f1 + w) plus conv reach.
        first = k * (self.frames_before - w) - self.centre
        count = k * (frames + 2 * w) + self.receptive - 1
        mel = self.mel(samples[:, first * hop : (first + count - 1) * hop + self.mel.n_fft])
        feats = self.convs(mel.to(self.to_tokens.weight.dtype))  # [B, C, k*(T+2w)]

        b = samples.shape[0]
        per_token = feats.transpose(1, 2).reshape(b, frames + 2 * w, self.tokens_per_frame, -1)
        tokens = self.to_tokens(per_token)  # [B, T+2w, tpf, D]
        windows = tokens.unfold(1, 2 * w + 1, 1)  # [B, T, tpf, D, 2w+1]
        x = windows.permute(0, 1, 4, 2, 3).reshape(b * frames, -1, self.dim) + self.position
        for layer in self.layers:
            x = layer(x)
        centre = x[:, w * self.tokens_per_frame : (w + 1) * self.tokens_per_frame]
        return self.norm(centre).reshape(b, frames, self.tokens_per_frame, self.dim)

    def _frames(self, samples: Tensor) -> int:
        """Number of output frames T; ValueError when S does not fit the contract."""
        if samples.ndim != 2:
            raise ValueError(f"samples must be [B, S], got {tuple(samples.shape)}")
        total, spf = samples.shape[1], self.samples_per_frame
        context = self.frames_before + self.frames_after
        if total % spf or total // spf <= context:
            raise ValueError(
                f"AudioEncoder needs S = (T + {self.frames_before} + {self.frames_after}) * {spf} samples"
                f" with T >= 1 (frames_before + T + frames_after whole frames), got S = {total}"
            )
        return total // spf - context
