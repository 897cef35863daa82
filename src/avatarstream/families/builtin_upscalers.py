"""The upscalers avatarstream ships, described without loading their model code (as ``builtin.py`` does for families).

``Builtin.family`` names the upscaler's class here. Nothing here may import torch or model code.
"""

from __future__ import annotations

from avatarstream.families.builtin import Builtin

BUILTIN_UPSCALERS: dict[str, Builtin] = {
    "bicubic": Builtin(
        "avatarstream.families.bicubic:BicubicUpscaler",
        "avatarstream.families.bicubic_options:BicubicOptions",
        "plain bicubic interpolation, no model: the baseline a super-resolution model has to beat",
        "none",
    ),
}
