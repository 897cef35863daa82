"""The FlashHead family's options: which variant and where its weights are, how they are held, and how chunks are generated."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from avatarstream.families.flashhead.presets import DEFAULT_PRESET, PRESETS
from avatarstream.families.options import DTYPE_NAMES, FamilyOptions, Size, option, torch_dtype
from avatarstream.families.quantization import quantize_modules_option, quantize_option

if TYPE_CHECKING:  # the CLI reads these options to build its flags: torch loads only when a model does
    import torch

#: What --quantize applies to unless --quantize-modules says otherwise: the DiT (the VAE and wav2vec2 keep their precision).
QUANTIZED_BY_DEFAULT = ("dit",)


@dataclass(frozen=True)
class FlashHeadOptions(FamilyOptions):
    """Every setting of the preset can be overridden one by one; unset ones take the preset's."""

    presets: ClassVar[dict[str, dict[str, Any]]] = {name: dataclasses.asdict(preset) for name, preset in PRESETS.items()}

    dtype: str | None = option(help="weight precision (default: bf16 on CUDA, fp32 on the CPU)", choices=DTYPE_NAMES, scope="load")
    base: Path | None = option(help="the SoulX-FlashHead-1_3B folder, if not under --weights", scope="load", metavar="DIR")
    audio_encoder: Path | None = option(help="the wav2vec2-base-960h folder, if not under --weights", scope="load", metavar="DIR")
    quantize: str | None = quantize_option()
    quantize_modules: str | None = quantize_modules_option(QUANTIZED_BY_DEFAULT)
    preset: str | None = option(
        help="pro (Model_Pro + the Wan 2.1 VAE; the default) or lite (Model_Lite + the LTX-Video VAE): which weights load, "
        "with the reference's settings (512x512, 33-frame chunks, 4 steps)",
        choices=tuple(PRESETS),
        flag="--model-preset",
        scope="load",
    )
    size: Size | None = option(help="output size (512x512); multiples of 16 (pro) or 32 (lite)")
    chunk_frames: int | None = option(help="frames one DiT call makes, motion frames included, 1 + 4k (pro) or 1 + 8k (lite) (33)", minimum=1, maximum=1000)
    motion_latents: int | None = option(help="latent frames each chunk continues from (2: 5 frames pro, 9 lite)", minimum=1, maximum=100, metavar="N")
    steps: int | None = option(help="re-noising steps (4, as distilled)", minimum=1, maximum=100, metavar="N")
    shift: float | None = option(help="time shift of the timesteps (5)", minimum=0.01, maximum=100.0, metavar="S")
    color_correction: float | None = option(
        help="strength 0-1 of the per-frame Lab colour correction towards the reference image (1)", minimum=0.0, maximum=1.0, metavar="STRENGTH"
    )
    audio_buffer_s: int | None = option(
        help="seconds of audio wav2vec2 re-encodes for every chunk, the reference's ring buffer (8)",
        minimum=1,
        maximum=60,
        flag="--audio-buffer",
        metavar="SECONDS",
    )

    @property
    def variant(self) -> str:
        return self.preset or DEFAULT_PRESET

    def torch_dtype(self, device: torch.device) -> torch.dtype:
        """``--dtype``: bf16 on CUDA and fp32 on the CPU unless named."""
        dtype: torch.dtype = torch_dtype(self.dtype, device)
        return dtype
