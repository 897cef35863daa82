"""Where FlashVSR's files are in a weights folder, checked before torch loads anything.

The folder holds what huggingface.co/JunhaoZhuang/FlashVSR gives (the DiT, the
LQ projection, the TCDecoder, the Wan 2.1 VAE) plus the fixed prompt
embedding, which only the GitHub repository has. ``config.json`` (the DiT's
sizes) is optional: the real download has none, and the sizes are then read
from the tensor shapes. pathlib and json only: no torch here.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from avatarstream.errors import InputError
from avatarstream.weights.sandbox import inside

HUB = "huggingface.co/JunhaoZhuang/FlashVSR"
PROMPT_SOURCE = "github.com/OpenImagingLab/FlashVSR examples/WanVSR/prompt_tensor/posi_prompt.pth"
DIT_FILE = "diffusion_pytorch_model_streaming_dmd.safetensors"
LQ_PROJ_FILE = "LQ_proj_in.ckpt"
TCDECODER_FILE = "TCDecoder.ckpt"
VAE_FILE = "Wan2.1_VAE.pth"
PROMPT_FILE = "posi_prompt.pth"
CONFIG_FILE = "config.json"
#: Where each file comes from, for the message that says it is missing.
SOURCES = {DIT_FILE: HUB, LQ_PROJ_FILE: HUB, TCDECODER_FILE: HUB, VAE_FILE: HUB, PROMPT_FILE: PROMPT_SOURCE}
MODES = ("tiny", "full")


@dataclass(frozen=True)
class FlashVSRLayout:
    folder: Path
    mode: str  # tiny (the TCDecoder) or full (the Wan VAE)
    dit: Path
    lq_proj: Path
    prompt: Path
    decoder: Path  # TCDecoder.ckpt (tiny mode) or Wan2.1_VAE.pth (full mode)
    config: Path | None  # the DiT's config.json, when the folder has one


def resolve(folder: Path, mode: str = "tiny") -> FlashVSRLayout:
    """The files ``mode`` needs in ``folder`` (tiny: the TCDecoder, full: the Wan VAE); a missing one is named with its source."""
    if mode not in MODES:
        raise InputError(f"FlashVSR mode must be one of {', '.join(MODES)}, got {mode!r}")
    if not folder.is_dir():
        raise InputError(f"FlashVSR weights folder {folder} not found; download {HUB} there and add {PROMPT_FILE} ({PROMPT_SOURCE})")
    decoder = TCDECODER_FILE if mode == "tiny" else VAE_FILE
    paths = {name: inside(folder, folder / name) for name in (DIT_FILE, LQ_PROJ_FILE, PROMPT_FILE, decoder)}
    missing = [name for name, path in paths.items() if not path.is_file()]
    if missing:
        where = "; ".join(f"{name} (from {SOURCES[name]})" for name in missing)
        raise InputError(f"{folder} lacks {where}; FlashVSR's {mode} mode needs them in that folder")
    config = inside(folder, folder / CONFIG_FILE)
    return FlashVSRLayout(folder, mode, paths[DIT_FILE], paths[LQ_PROJ_FILE], paths[PROMPT_FILE], paths[decoder], config if config.is_file() else None)
