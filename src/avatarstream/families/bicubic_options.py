"""The ``bicubic`` upscaler's options (no torch here: the commands make their flags from it)."""

from __future__ import annotations

from dataclasses import dataclass

from avatarstream.families.options import FamilyOptions, option

#: The factors it offers: those of the super-resolution models it is the baseline for.
SCALES = (2, 3, 4)


@dataclass(frozen=True)
class BicubicOptions(FamilyOptions):
    scale: int | None = option(help="how many times wider and taller the frames come out (4)", minimum=min(SCALES), maximum=max(SCALES), metavar="N")
