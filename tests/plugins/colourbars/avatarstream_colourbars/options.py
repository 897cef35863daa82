"""The colourbars family's one option of its own."""

from __future__ import annotations

from dataclasses import dataclass

from avatarstream.plugin import FamilyOptions, option

DEFAULT_BARS = 4


@dataclass(frozen=True)
class ColourBarsOptions(FamilyOptions):
    bars: int | None = option(help=f"vertical colour bars across the frame ({DEFAULT_BARS})", minimum=1, maximum=16)
