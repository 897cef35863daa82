"""The files the package ships: the default avatar and speech every command falls back to."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

ASSETS = resources.files("avatarstream") / "assets"
#: The one default avatar, every family's: a held-out procedural identity, which the bundled weights animate (MODEL.md).
DEFAULT_REFERENCE = Path(str(ASSETS / "reference.png"))
#: A few seconds of speech for demos and benchmarks.
DEFAULT_SPEECH = Path(str(ASSETS / "speech.flac"))
