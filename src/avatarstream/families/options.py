"""What a user can ask of any family's pipeline; ``None`` means the family's (or its preset's) default.

Families differ in what they support: one that has no use for an option
refuses it by name, so a wrong flag is an error, never silently ignored.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Any

from avatarstream.errors import InputError

#: Bounds far beyond any useful setting (the families check the useful range): a typo such as ``--steps 100000`` is
#: refused at once instead of running for hours or allocating a chunk of a hundred thousand frames.
UPPER_LIMITS = {"chunk_frames": 1000, "interp_frames": 1000, "motion_frames": 1000, "steps": 1000, "audio_lookahead": 1000, "audio_window_s": 600}
FINITE = ("shift", "text_guidance", "audio_guidance", "audio_window_s")


def flag(name: str) -> str:
    return "--" + name.replace("_", "-").removesuffix("-s")


@dataclass(frozen=True)
class GenerationOptions:
    preset: str | None = None
    chunk_frames: int | None = None
    interp_frames: int | None = None
    motion_frames: int | None = None
    steps: int | None = None
    shift: float | None = None
    text_guidance: float | None = None
    audio_guidance: float | None = None
    motion: str | None = None  # how motion frames are handed over: "reencode" or "latent"
    size: tuple[int, int] | None = None  # (width, height)
    negative_prompt: str | None = None
    audio_window_s: float | None = None
    audio_lookahead: int | None = None  # video frames of audio after a chunk its features see

    def __post_init__(self) -> None:
        for name in FINITE:
            value = getattr(self, name)
            if value is not None and not math.isfinite(value):
                raise InputError(f"{flag(name)} must be a finite number, got {value}")
        for name, limit in UPPER_LIMITS.items():
            value = getattr(self, name)
            if value is not None and value > limit:
                raise InputError(f"{flag(name)} {value} is over the limit of {limit}; the model's default is far below it (see --help)")

    def given(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name) is not None}

    def refuse(self, family: str, supported: set[str]) -> None:
        """Raise for every option given that ``family`` does not support."""
        unsupported = sorted(set(self.given()) - supported)
        if unsupported:
            flags = ", ".join("--" + name.replace("_", "-") for name in unsupported)
            raise InputError(f"the {family} model has no use for {flags}; it takes: {', '.join('--' + s.replace('_', '-') for s in sorted(supported))}")
