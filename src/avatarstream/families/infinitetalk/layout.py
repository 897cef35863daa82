"""Where the InfiniteTalk family's files are: the folders users download, under their download names.

A weights root holds the Wan base model in the original layout
(``Wan2.1-I2V-14B-480P/``) or the Diffusers layout
(``Wan2.1-I2V-14B-480P-Diffusers/``), the adapter (``InfiniteTalk/``) and the
audio encoder (``chinese-wav2vec2-base/``). Each folder can also be named
explicitly when it lives elsewhere.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from avatarstream.components.wan.layout import Layout
from avatarstream.errors import InputError
from avatarstream.weights.sandbox import inside

BASE_NAMES = ("Wan2.1-I2V-14B-480P", "Wan2.1-I2V-14B-720P")
DIFFUSERS_SUFFIX = "-Diffusers"
ADAPTER_FILE = Path("InfiniteTalk") / "single" / "infinitetalk.safetensors"
AUDIO_ENCODER_DIR = "chinese-wav2vec2-base"
#: Original-layout file name of the image encoder (as in the Wan download; the VAE's and the text encoder's are shared).
CLIP_FILE = "models_clip_open-clip-xlm-roberta-large-vit-huge-14.pth"


@dataclass(frozen=True)
class WeightsLayout:
    """The resolved folders and files of one InfiniteTalk checkpoint."""

    base: Path
    layout: Layout
    adapter: Path
    audio_encoder: Path


def base_layout(folder: Path) -> Layout:
    """Tell the two download layouts of the Wan base model apart, with a clear error for anything else."""
    if not folder.is_dir():
        raise InputError(f"base model folder {folder} not found; expected Wan2.1-I2V-14B-480P (original) or Wan2.1-I2V-14B-480P-Diffusers")
    if (folder / "model_index.json").is_file() or (folder / "transformer").is_dir():
        return "diffusers"
    config = folder / "config.json"
    if not config.is_file():
        raise InputError(
            f"{folder} holds neither config.json (original Wan layout) nor model_index.json (Diffusers layout); "
            "point at the downloaded Wan2.1-I2V-14B-480P folder"
        )
    inside(folder, config)
    try:
        raw = json.loads(config.read_text())
    except (OSError, ValueError) as exc:  # json.JSONDecodeError and UnicodeDecodeError are ValueErrors
        raise InputError(f"invalid {config}: {exc}") from exc
    model_type = raw.get("model_type") if isinstance(raw, dict) else None
    if model_type is None or raw.get("_class_name", "WanModel") != "WanModel":
        raise InputError(f"{config} is not the config of a Wan model (no model_type 'i2v'); point at the downloaded Wan2.1-I2V-14B-480P folder")
    if model_type != "i2v":
        raise InputError(f"{config} describes a Wan {model_type!r} model; InfiniteTalk needs the image-to-video base (model_type 'i2v'), Wan2.1-I2V-14B-480P")
    return "original"


def resolve(root: Path | None, *, base: Path | None = None, adapter: Path | None = None, audio_encoder: Path | None = None) -> WeightsLayout:
    """Find the three parts under ``root`` by their download names; explicit paths win."""
    if root is None:
        if base is None or adapter is None or audio_encoder is None:
            raise InputError("the infinitetalk model needs --weights ROOT (the folder holding the downloads), or each folder named explicitly")
    else:
        if not root.is_dir():
            raise InputError(f"weights folder {root} not found; expected the folder that holds Wan2.1-I2V-14B-480P, InfiniteTalk and chinese-wav2vec2-base")
        # What is found under the root by its download name must lie inside the root; a folder named explicitly may be anywhere.
        base = base or inside(root, _find_base(root))
        adapter = adapter or inside(root, root / ADAPTER_FILE)
        audio_encoder = audio_encoder or inside(root, root / AUDIO_ENCODER_DIR)
    if adapter.is_dir():
        folder = adapter
        adapter = inside(folder, adapter / "single" / ADAPTER_FILE.name if (adapter / "single").is_dir() else adapter / ADAPTER_FILE.name)
    if not adapter.is_file():
        raise InputError(f"audio adapter {adapter} not found; download InfiniteTalk/single/infinitetalk.safetensors into the weights folder")
    if not (audio_encoder / "config.json").is_file():
        raise InputError(f"audio encoder folder {audio_encoder} has no config.json; download chinese-wav2vec2-base (Hugging Face layout) there")
    return WeightsLayout(base, base_layout(base), adapter, audio_encoder)


def _find_base(root: Path) -> Path:
    candidates = [root / (name + suffix) for name in BASE_NAMES for suffix in ("", DIFFUSERS_SUFFIX)]
    found = [c for c in candidates if c.is_dir()]
    if not found:
        raise InputError(f"no Wan base model in {root}; expected one of: {', '.join(c.name for c in candidates)}")
    return found[0]
