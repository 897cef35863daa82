"""Regenerate the bundled demo inputs (speech sample and reference image).

Run once by a maintainer; the outputs are committed under
src/avatarstream/assets/. Needs Debian's espeak-ng and sox.
"""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

from PIL import Image, ImageDraw

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


def make_reference(path: Path, size: int = 256) -> None:
    """A plain stylised head; issue-3's procedural renderer will replace it."""
    img = Image.new("RGB", (size, size), (92, 128, 168))
    d = ImageDraw.Draw(img)
    s = size / 256
    d.ellipse([70 * s, 40 * s, 186 * s, 120 * s], fill=(60, 40, 30))  # hair
    d.ellipse([78 * s, 58 * s, 178 * s, 196 * s], fill=(226, 184, 150))  # face
    d.rectangle([110 * s, 190 * s, 146 * s, 230 * s], fill=(214, 170, 138))  # neck
    d.pieslice([50 * s, 215 * s, 206 * s, 330 * s], 180, 360, fill=(40, 90, 70))  # shoulders
    for x in (105, 151):
        d.ellipse([(x - 9) * s, 112 * s, (x + 9) * s, 124 * s], fill=(250, 250, 250))
        d.ellipse([(x - 4) * s, 114 * s, (x + 4) * s, 122 * s], fill=(40, 60, 90))
        d.line([(x - 11) * s, 104 * s, (x + 11) * s, 102 * s], fill=(60, 40, 30), width=max(1, int(3 * s)))
    d.line([128 * s, 124 * s, 124 * s, 146 * s, 131 * s, 148 * s], fill=(190, 140, 110), width=max(1, int(2 * s)))
    d.ellipse([112 * s, 160 * s, 144 * s, 172 * s], fill=(170, 70, 70))  # mouth
    img.save(path)


if __name__ == "__main__":
    ASSETS.mkdir(parents=True, exist_ok=True)
    make_speech(ASSETS / "speech.flac")
    make_reference(ASSETS / "reference.png")
    print("wrote", *sorted(p.name for p in ASSETS.iterdir()))
