"""Where the FlashHead family's files are, as downloaded: ``SoulX-FlashHead-1_3B/`` and ``wav2vec2-base-960h/``.

The FlashHead folder holds one DiT per variant (``Model_Pro/``, ``Model_Lite/``:
``config.json`` and one safetensors file) and their VAEs (``VAE_Wan/Wan2.1_VAE.pth``,
``VAE_LTX/`` in diffusers' format). Only the chosen variant's files must be
there. Pathlib and json only: the commands run this check before torch loads.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from avatarstream.components.wan.layout import VAE_FILE as WAN_VAE_FILE
from avatarstream.errors import InputError
from avatarstream.weights.sandbox import inside

BASE_DIR = "SoulX-FlashHead-1_3B"
AUDIO_ENCODER_DIR = "wav2vec2-base-960h"
MODEL_DIRS = {"pro": "Model_Pro", "lite": "Model_Lite"}
VAE_DIRS = {"pro": "VAE_Wan", "lite": "VAE_LTX"}
WEIGHTS_STEM = "diffusion_pytorch_model"
DOCS = "docs/models/flashhead.md"


@dataclass(frozen=True)
class WeightsLayout:
    variant: str
    model: Path  # Model_Pro/ or Model_Lite/
    vae: Path  # VAE_Wan/ or VAE_LTX/
    audio_encoder: Path

    @property
    def weights_file(self) -> Path:
        return self.model / f"{WEIGHTS_STEM}.safetensors"


def _weights_present(folder: Path) -> bool:
    return any((folder / f"{WEIGHTS_STEM}{suffix}").is_file() for suffix in (".safetensors", ".safetensors.index.json"))


def resolve(root: Path | None, *, variant: str, base: Path | None = None, audio_encoder: Path | None = None) -> WeightsLayout:
    """The ``variant``'s folders under ``root`` by their download names; ``base`` / ``audio_encoder`` named explicitly win."""
    if variant not in MODEL_DIRS:
        raise InputError(f"unknown FlashHead variant {variant!r}; choose one of {', '.join(MODEL_DIRS)}")
    if root is None and (base is None or audio_encoder is None):
        raise InputError(f"the flashhead model needs --weights ROOT (the folder holding {BASE_DIR}/ and {AUDIO_ENCODER_DIR}/), or both named explicitly")
    if root is not None:
        if not root.is_dir():
            raise InputError(f"weights folder {root} not found; expected the folder that holds {BASE_DIR}/ and {AUDIO_ENCODER_DIR}/")
        base = base or inside(root, root / BASE_DIR)
        audio_encoder = audio_encoder or inside(root, root / AUDIO_ENCODER_DIR)
    assert base is not None and audio_encoder is not None
    model, vae = inside(base, base / MODEL_DIRS[variant]), inside(base, base / VAE_DIRS[variant])
    download = f"download Soul-AILab/SoulX-FlashHead-1_3B into {base} ({DOCS})"
    if not (model / "config.json").is_file() or not _weights_present(model):
        raise InputError(f"{model} lacks config.json or {WEIGHTS_STEM}.safetensors: the {variant} variant's DiT is missing; {download}")
    if variant == "pro" and not (vae / WAN_VAE_FILE).is_file():
        raise InputError(f"{vae / WAN_VAE_FILE} not found: the pro variant's Wan 2.1 VAE is missing; {download}")
    if variant == "lite" and (not (vae / "config.json").is_file() or not _weights_present(vae)):
        raise InputError(f"{vae} lacks config.json or {WEIGHTS_STEM}.safetensors: the lite variant's LTX-Video VAE is missing; {download}")
    if not (audio_encoder / "config.json").is_file():
        raise InputError(f"{audio_encoder} has no config.json; download facebook/wav2vec2-base-960h there ({DOCS})")
    return WeightsLayout(variant, model, vae, audio_encoder)
