"""LiveAvatar's published real-time configuration, and the checks on what a user overrides.

``liveavatar``: the reference's streaming settings (704x384, 4 distilled
steps, shift 3, no guidance, a rolling cache of one 48-frame clip = 4 blocks).
"""

from __future__ import annotations

from dataclasses import dataclass

from avatarstream.errors import InputError

#: Pixels per side unit: the VAE's stride (8) times FramePack's coarsest patch (8).
SIZE_MULTIPLE = 64


@dataclass(frozen=True)
class Preset:
    size: tuple[int, int]  # (width, height)
    steps: int = 4
    shift: float = 3.0
    cache_blocks: int = 4  # blocks each rolling KV cache holds (the reference: one clip of 12 latent frames)
    audio_window_s: float = 4.0
    audio_lookahead: int = 8  # video frames of audio after a block its features see


PRESETS = {"liveavatar": Preset((704, 384))}


def check_size(size: tuple[int, int]) -> tuple[int, int]:
    width, height = size
    if width < SIZE_MULTIPLE or height < SIZE_MULTIPLE or width % SIZE_MULTIPLE or height % SIZE_MULTIPLE or width * height > 1280 * 768:
        raise InputError(f"--size must be WIDTHxHEIGHT in multiples of {SIZE_MULTIPLE} up to 1280x768 (e.g. 704x384); got {width}x{height}")
    return size


def parse_offsets(text: str | None) -> tuple[int, ...]:
    """``--sink-offsets 28,18,7``: the sink offsets in call order (block by block, step by step), cycled."""
    if not text:
        return ()
    try:
        values = tuple(int(v) for v in text.replace(" ", "").split(","))
    except ValueError:
        raise InputError(f"--sink-offsets must be comma-separated whole numbers such as 28,18,7,4; got {text!r}") from None
    if any(v < 0 or v > 1000 for v in values):
        raise InputError(f"--sink-offsets must be 0 to 1000 frames each (the reference draws 4 to 30); got {text!r}")
    return values
