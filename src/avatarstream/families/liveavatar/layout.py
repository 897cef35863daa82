"""Where the LiveAvatar family's files are: ``Wan2.2-S2V-14B/`` and ``LiveAvatar/liveavatar.safetensors``, as downloaded.

The base folder holds the DiT (sharded safetensors + index, ``config.json``),
the Wan 2.1 VAE (``Wan2.1_VAE.pth``), the audio encoder
(``wav2vec2-large-xlsr-53-english/``) and the umT5 text encoder with its
tokenizer. Every file is resolved inside the folder it was found in.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from avatarstream.errors import InputError
from avatarstream.weights.sandbox import inside

BASE_DIR = "Wan2.2-S2V-14B"
LORA_FILE = Path("LiveAvatar") / "liveavatar.safetensors"
AUDIO_ENCODER_DIR = "wav2vec2-large-xlsr-53-english"


@dataclass(frozen=True)
class WeightsLayout:
    base: Path
    lora: Path
    audio_encoder: Path


def resolve(root: Path | None, *, base: Path | None = None, lora: Path | None = None) -> WeightsLayout:
    """The parts under ``root`` by their download names; ``base`` / ``lora`` named explicitly win."""
    if root is None and (base is None or lora is None):
        raise InputError("the liveavatar model needs --weights ROOT (the folder holding Wan2.2-S2V-14B/ and LiveAvatar/), or both named explicitly")
    if root is not None:
        if not root.is_dir():
            raise InputError(f"weights folder {root} not found; expected the folder that holds {BASE_DIR}/ and {LORA_FILE.parent}/")
        base = base or inside(root, root / BASE_DIR)
        lora = lora or inside(root, root / LORA_FILE)
    assert base is not None and lora is not None
    if not (base / "config.json").is_file():
        raise InputError(f"{base} has no config.json; download Wan2.2-S2V-14B there (docs/models/liveavatar.md)")
    if lora.is_dir():
        lora = inside(lora, lora / LORA_FILE.name)
    if not lora.is_file():
        raise InputError(f"LoRA {lora} not found; download LiveAvatar/liveavatar.safetensors into the weights folder")
    audio = inside(base, base / AUDIO_ENCODER_DIR)
    if not (audio / "config.json").is_file():
        raise InputError(f"{audio} has no config.json; the Wan2.2-S2V-14B download includes {AUDIO_ENCODER_DIR}/")
    return WeightsLayout(base, lora, audio)
