"""The upscalers avatarstream ships, described without loading their model code (as ``builtin.py`` does for families).

``Builtin.family`` names the upscaler's class here. Nothing here may import torch or model code.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from avatarstream.families.builtin import Builtin

if TYPE_CHECKING:
    from avatarstream.families.flashvsr.options import FlashVSROptions


def _flashvsr_weights(root: Path | None, options: FlashVSROptions) -> None:
    """The files the chosen mode needs are in the folder (``layout.resolve``: pathlib only)."""
    from avatarstream.errors import InputError
    from avatarstream.families.flashvsr.layout import HUB, resolve

    if root is None:
        raise InputError(f"the flashvsr upscaler needs its weights: --upscale-weights DIR, the folder of {HUB}")
    resolve(root, options.decoder_mode)


BUILTIN_UPSCALERS: dict[str, Builtin] = {
    "bicubic": Builtin(
        "avatarstream.families.bicubic:BicubicUpscaler",
        "avatarstream.families.bicubic_options:BicubicOptions",
        "plain bicubic interpolation, no model: the baseline a super-resolution model has to beat",
        "none",
    ),
    "flashvsr": Builtin(
        "avatarstream.families.flashvsr.upscaler:FlashVSRUpscaler",
        "avatarstream.families.flashvsr.options:FlashVSROptions",
        "FlashVSR (Wan2.1-T2V-1.3B, one step per 8 frames, block-sparse attention): 4x streaming video super-resolution",
        "the folder of huggingface.co/JunhaoZhuang/FlashVSR, plus posi_prompt.pth from its GitHub repository",
        _flashvsr_weights,
    ),
}
