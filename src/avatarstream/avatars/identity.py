"""An avatar's identity: every look parameter, drawn deterministically from one seed."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

Colour = tuple[float, float, float]

SKIN_TONES: tuple[Colour, ...] = (
    (246, 214, 190),
    (236, 196, 160),
    (222, 172, 130),
    (198, 140, 100),
    (168, 112, 80),
    (130, 88, 62),
    (108, 74, 54),
)
HAIR_COLOURS: tuple[Colour, ...] = (
    (30, 24, 20),
    (70, 45, 28),
    (120, 80, 40),
    (200, 160, 90),
    (160, 60, 30),
    (150, 150, 155),
    (60, 60, 110),
    (150, 40, 90),
)
EYE_COLOURS: tuple[Colour, ...] = ((70, 45, 25), (40, 90, 150), (60, 120, 70), (110, 90, 50), (90, 100, 110))
HAIR_STYLES = ("short", "long", "bun", "fringe", "bald", "curly")
HELD_OUT_IDENTITIES = 1_000_000
"""Identity seeds below this are for training; seeds from here on are held out for evaluation."""


@dataclass(frozen=True)
class Identity:
    """Geometry in pixels of the 256x256 frame, colours as RGB 0..255."""

    seed: int
    face_width: float
    face_height: float
    chin: float
    """How narrow the jaw is (0 round .. 1 pointed)."""
    skin: Colour
    hair: Colour
    hair_style: str
    eye_colour: Colour
    eye_size: float
    eye_spacing: float
    nose_length: float
    nose_width: float
    brow_thickness: float
    brow_tilt: float
    lip: Colour
    mouth_width: float
    glasses: bool
    earrings: bool
    background_top: Colour
    background_bottom: Colour
    shirt: Colour

    @classmethod
    def from_seed(cls, seed: int) -> Identity:
        rng = np.random.default_rng([seed, 0x1D])
        skin = _jitter(rng, SKIN_TONES[rng.integers(len(SKIN_TONES))], 8)
        red, green, blue = (float(np.clip(c * f, 0, 255)) for c, f in zip(skin, (0.82, 0.55, 0.55)))
        lip = (red, green, blue)
        return cls(
            seed=seed,
            face_width=float(rng.uniform(54, 68)),
            face_height=float(rng.uniform(70, 82)),
            chin=float(rng.uniform(0.0, 1.0)),
            skin=skin,
            hair=_jitter(rng, HAIR_COLOURS[rng.integers(len(HAIR_COLOURS))], 12),
            hair_style=HAIR_STYLES[rng.integers(len(HAIR_STYLES))],
            eye_colour=_jitter(rng, EYE_COLOURS[rng.integers(len(EYE_COLOURS))], 10),
            eye_size=float(rng.uniform(7.5, 11.0)),
            eye_spacing=float(rng.uniform(21, 28)),
            nose_length=float(rng.uniform(14, 22)),
            nose_width=float(rng.uniform(6, 10)),
            brow_thickness=float(rng.uniform(2.0, 4.5)),
            brow_tilt=float(rng.uniform(-0.25, 0.25)),
            lip=lip,
            mouth_width=float(rng.uniform(15, 21)),
            glasses=bool(rng.random() < 0.3),
            earrings=bool(rng.random() < 0.3),
            background_top=_random_colour(rng),
            background_bottom=_random_colour(rng),
            shirt=_random_colour(rng),
        )


def _jitter(rng: np.random.Generator, colour: Colour, amount: float) -> Colour:
    r, g, b = (float(np.clip(c + rng.uniform(-amount, amount), 0, 255)) for c in colour)
    return r, g, b


def _random_colour(rng: np.random.Generator) -> Colour:
    """A fairly muted colour, bright enough never to read as the dark mouth interior."""
    hue = rng.uniform(0, 1)
    base = np.array([np.cos(2 * np.pi * (hue + k / 3)) for k in range(3)])
    r, g, b = (float(v) for v in np.clip(150 + 70 * base * rng.uniform(0.3, 1.0), 70, 240))
    return r, g, b
