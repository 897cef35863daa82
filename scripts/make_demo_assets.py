"""Regenerate the bundled speech sample (the default avatar is assets/reference.png, a held-out procedural identity).

Run once by a maintainer; the outputs are committed under
src/avatarstream/assets/. Needs Debian's espeak-ng and sox.
"""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

ASSETS = Path(__file__).resolve().parents[1] / "src" / "avatarstream" / "assets"
SPEECH = (
    "Hello! I am the avatar stream demo. I keep talking for as long as there is audio, "
    "chunk by chunk, with constant memory. Every frame you see was generated while the "
    "video was being written."
)


def make_speech(path: Path) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        wav = Path(tmp) / "speech.wav"
        subprocess.run(["espeak-ng", "-v", "en-us", "-s", "150", "-p", "45", "-w", str(wav), SPEECH], check=True)
        subprocess.run(["sox", str(wav), "-r", "22050", "-c", "1", str(path)], check=True)


if __name__ == "__main__":
    ASSETS.mkdir(parents=True, exist_ok=True)
    make_speech(ASSETS / "speech.flac")
    print("wrote", *sorted(p.name for p in ASSETS.iterdir()))
