"""A demo weights folder's layout, read without torch: ``avatarstream render --model demo --weights DIR`` checks it
before the model code loads, and ``DemoFamily.load`` reads the same ``config.json`` through here."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any

from avatarstream.errors import InputError
from avatarstream.families.demo_options import DemoOptions
from avatarstream.weights.sandbox import inside

#: Weights trained by ``make train-demo`` and shipped with the package (see MODEL.md).
SHIPPED_WEIGHTS = resources.files("avatarstream") / "assets" / "demo"
#: The layout of a demo weights folder (config.json + one .safetensors per module); config.json names it.
FORMAT_KEY, FORMAT_VERSION = "format_version", 1
#: Folders of an InfiniteTalk download root, to name the right --model when one is given to demo.
INFINITETALK_FOLDERS = ("InfiniteTalk", "chinese-wav2vec2-base", "Wan2.1-I2V-14B-480P", "Wan2.1-I2V-14B-480P-Diffusers")


def read_config_json(folder: Path) -> dict[str, Any]:
    """The folder's config.json as a mapping of the model's sizes (the format key checked and removed)."""
    path = folder / "config.json"
    if not folder.is_dir():
        what = "is a file, not a folder" if folder.exists() else "not found"
        raise InputError(f"weights folder {folder} {what}; --weights names a folder holding config.json and one .safetensors per module")
    if not path.is_file() and any((folder / name).is_dir() for name in INFINITETALK_FOLDERS):
        raise InputError(f"{folder} holds InfiniteTalk downloads, not demo weights; run it with --model infinitetalk --weights {folder}")
    if not path.is_file():
        raise InputError(f"no config.json in weights folder {folder}; a weights folder holds config.json and one .safetensors per module")
    inside(folder, path)
    try:
        data = json.loads(path.read_text())
    except ValueError as exc:  # json.JSONDecodeError, and text that is not UTF-8
        raise InputError(f"invalid {path}: {exc}") from exc
    if not isinstance(data, dict):
        raise InputError(f"invalid {path}: expected a JSON object")
    version = data.pop(FORMAT_KEY, FORMAT_VERSION)  # folders written before the key existed are version 1
    if version != FORMAT_VERSION:
        raise InputError(
            f"weights folder {folder} has format version {version!r}; this avatarstream reads version {FORMAT_VERSION}: "
            "use the avatarstream release that wrote it, or retrain with `make train-demo`"
        )
    return data


def check_demo_weights(weights: Path | None, options: DemoOptions) -> None:
    """The registry's light check: a named folder holds a readable config.json of this format."""
    if weights is not None:
        read_config_json(weights)
