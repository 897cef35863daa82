"""FlashVSR's windowed token layout: 2 latent frames x 8 x 8 tokens per window, the 128-token block of its sparse attention.

Windows are ordered by time slab, window row, window column; inside a window
by frame, row, column. The KV cache holds keys and values in this layout.
"""

from __future__ import annotations

import torch

from avatarstream.models.flashvsr.config import WINDOW


def partition(tokens: torch.Tensor, frames: int, height: int, width: int) -> torch.Tensor:
    """[1, frames * height * width, D] in (t, y, x) order -> [windows, 128, D]."""
    wf, wh, ww = WINDOW
    x = tokens.view(frames // wf, wf, height // wh, wh, width // ww, ww, -1)
    return x.permute(0, 2, 4, 1, 3, 5, 6).reshape(-1, wf * wh * ww, tokens.shape[-1])


def reverse(windows: torch.Tensor, frames: int, height: int, width: int) -> torch.Tensor:
    """[windows, 128, D] -> [1, frames * height * width, D] in (t, y, x) order."""
    wf, wh, ww = WINDOW
    x = windows.view(frames // wf, height // wh, width // ww, wf, wh, ww, -1)
    return x.permute(0, 3, 1, 4, 2, 5, 6).reshape(1, frames * height * width, -1)


def windows_per_slab(height: int, width: int) -> int:
    """Windows in one time slab of a token grid ``height`` x ``width``."""
    return (height // WINDOW[1]) * (width // WINDOW[2])
