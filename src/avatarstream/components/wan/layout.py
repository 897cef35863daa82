"""The file names the Wan base downloads give the shared parts, and the mark a random tiny checkpoint carries.

Every Wan base model folder (Wan2.1-I2V, Wan2.2-S2V) holds the VAE and the
UMT5 text encoder under the same names. A folder comes in Wan's original
layout or in the Diffusers one; loaders of the shared parts take either.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from safetensors import SafetensorError, safe_open

#: Original-layout file names of the VAE and the text encoder (as in the Wan download).
VAE_FILE = "Wan2.1_VAE.pth"
T5_FILE = "models_t5_umt5-xxl-enc-bf16.pth"
T5_TOKENIZER_DIR = Path("google") / "umt5-xxl"
#: The key a random checkpoint (a family's tiny.py) sets in the safetensors metadata of its family's own weights file
#: (an adapter, a LoRA); the value says how it was made.
RANDOM_MARK = "avatarstream_random_weights"

Layout = Literal["original", "diffusers"]


def random_mark(path: Path) -> str | None:
    """How a random checkpoint was made, from the metadata of the file a tiny writer marked; None for real weights
    (or an unreadable file, which loading it reports)."""
    try:
        with safe_open(str(path), framework="pt") as handle:
            return (handle.metadata() or {}).get(RANDOM_MARK)
    except (OSError, SafetensorError):
        return None
