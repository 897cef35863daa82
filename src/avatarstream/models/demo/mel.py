"""Log-mel spectrogram with a fixed (data-independent) normalisation.

No centre padding and no per-signal statistics: a mel frame depends only on
its own n_fft samples, which is what makes chunked audio features exact.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn


def _hz_to_mel(hz: Tensor) -> Tensor:
    return 2595.0 * torch.log10(1.0 + hz / 700.0)


def _mel_to_hz(mel: Tensor) -> Tensor:
    return 700.0 * (10.0 ** (mel / 2595.0) - 1.0)


def mel_filterbank(sample_rate: int, n_fft: int, n_mels: int, f_min: float = 0.0, f_max: float | None = None) -> Tensor:
    """Triangular HTK-mel filters [n_fft // 2 + 1, n_mels], each normalised to unit area."""
    f_max = sample_rate / 2 if f_max is None else f_max
    freqs = torch.linspace(0.0, sample_rate / 2, n_fft // 2 + 1, dtype=torch.float64)
    edges = _mel_to_hz(
        torch.linspace(
            2595.0 * math.log10(1.0 + f_min / 700.0),  # _hz_to_mel on Python floats: no tensor, so the table builds on meta too
            2595.0 * math.log10(1.0 + f_max / 700.0),
            n_mels + 2,
            dtype=torch.float64,
        )
    )
    lower, centre, upper = edges[:-2], edges[1:-1], edges[2:]
    rising = (freqs[:, None] - lower) / (centre - lower)
    falling = (upper - freqs[:, None]) / (upper - centre)
    fb = torch.clamp(torch.minimum(rising, falling), min=0.0)
    fb = fb / fb.sum(dim=0, keepdim=True).clamp_min(1e-12)
    return fb.float()


class LogMel(nn.Module):
    """samples [B, S] -> log-mel [B, n_mels, M] with M = (S - n_fft) // hop + 1.

    Mel frame i covers samples [i*hop, i*hop + n_fft). Computed in float32
    whatever the module dtype (STFT precision matters more than its cost).
    """

    window: Tensor  # buffers, registered in __init__
    filters: Tensor

    def __init__(self, sample_rate: int, n_fft: int, win_length: int, hop_length: int, n_mels: int) -> None:
        super().__init__()
        self.n_fft = n_fft
        self.win_length = win_length
        self.hop_length = hop_length
        self.register_buffer("window", torch.hann_window(win_length, periodic=True), persistent=False)
        self.register_buffer("filters", mel_filterbank(sample_rate, n_fft, n_mels), persistent=False)

    def forward(self, samples: Tensor) -> Tensor:
        spec = torch.stft(samples.float(), self.n_fft, self.hop_length, self.win_length, window=self.window.float(), center=False, return_complex=True)
        power = spec.real.square() + spec.imag.square()  # [B, F, M]
        mel = torch.einsum("bfm,fn->bnm", power, self.filters.float())
        # log10 spans about [-10, 4] for audio in [-1, 1]; a fixed affine map keeps it near unit range.
        return (torch.log10(mel.clamp_min(1e-10)) + 4.0) / 4.0
