"""The InfiniteTalk family's options: how its weights are read, its presets, and how chunks are generated."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from avatarstream.families.infinitetalk.presets import PRESETS
from avatarstream.families.options import DTYPE_NAMES, FamilyOptions, Size, option, torch_dtype
from avatarstream.families.quantization import quantize_modules_option, quantize_option

if TYPE_CHECKING:  # the CLI reads these options to build its flags: torch loads only when a model does
    import torch

DTYPES = DTYPE_NAMES
FIDELITIES = ("streaming", "reference")
#: What --quantize applies to unless --quantize-modules says otherwise: the DiT and UMT5 (CLIP, the VAE and wav2vec2 keep their precision).
QUANTIZED_BY_DEFAULT = ("dit", "text_encoder")


@dataclass(frozen=True)
class InfiniteTalkOptions(FamilyOptions):
    """Every setting of a preset can be overridden one by one; unset ones take the preset's."""

    presets: ClassVar[dict[str, dict[str, Any]]] = {name: dataclasses.asdict(preset) for name, preset in PRESETS.items()}

    dtype: str | None = option(help="weight precision (default: bf16 on CUDA, fp32 on the CPU)", choices=DTYPES, scope="load")
    base: Path | None = option(help="the Wan2.1-I2V-14B-480P (or -Diffusers) folder, if not under --weights", scope="load", metavar="DIR")
    adapter: Path | None = option(help="infinitetalk.safetensors (or its folder), if not under --weights", scope="load", metavar="PATH")
    audio_encoder: Path | None = option(help="the chinese-wav2vec2-base folder, if not under --weights", scope="load", metavar="DIR")
    quantized_dit: Path | None = option(
        help="the publisher's quantized DiT, read as it is (InfiniteTalk/quant_models/infinitetalk_single_fp8.safetensors or _int8, "
        "its quantization map .json beside it): the base's DiT shards and the adapter file are not read, and --quantize applies "
        "to the other modules",
        scope="load",
        metavar="FILE",
    )
    quantize: str | None = quantize_option()
    quantize_modules: str | None = quantize_modules_option(QUANTIZED_BY_DEFAULT)
    preset: str | None = option(
        help="infinitetalk (81-frame chunks, 40 steps, guidance 5/4; the default) or flashtalk (33 frames, 4 steps, no guidance)",
        choices=tuple(PRESETS),
        flag="--model-preset",
    )
    chunk_frames: int | None = option(help="frames per chunk window, 1 + 4k (81)", minimum=1, maximum=1000)
    interp_frames: int | None = option(help="frames each I-chunk regenerates at a seam, a multiple of 4; 0 switches I-chunks off (0)", minimum=0, maximum=1000)
    motion_frames: int | None = option(help="frames of the previous chunk each chunk continues from, 1 + 4k (9)", minimum=1, maximum=1000)
    steps: int | None = option(help="flow-matching Euler steps (infinitetalk: 40, flashtalk: 4)", maximum=1000)
    shift: float | None = option(help="time shift of the flow-matching schedule (7 at 480p, 11 at 720p)")
    text_guidance: float | None = option(help="text guidance scale (1 = none)")
    audio_guidance: float | None = option(help="audio guidance scale (1 = none)")
    motion: str | None = option(
        help="motion frames re-encoded from decoded pixels (as the reference) or handed over as latents (cheaper)", choices=("reencode", "latent")
    )
    fidelity: str | None = option(
        help="streaming: bounded memory and latency (the default); reference: the authors' CLI frame for frame (whole-file audio "
        "features, one generator, each chunk decoded whole and colour-corrected; files only, more memory)",
        choices=FIDELITIES,
    )
    color_correction: float | None = option(
        help="strength 0-1 of the reference's colour correction of every frame towards the reference image (reference: 1, streaming: 0)",
        minimum=0.0,
        maximum=1.0,
        metavar="STRENGTH",
    )
    size: Size | None = option(
        help="output size in multiples of 16 (default: the preset's, 832x480 or 768x448; with --fidelity reference, the reference "
        "CLI's infinitetalk-480 size bucket closest to the image's aspect)"
    )
    negative_prompt: str | None = option(help="what guidance steers away from (default: the reference's)")
    audio_window_s: float | None = option(help="seconds of audio wav2vec2 sees per chunk (bounded; 8)", maximum=600, flag="--audio-window", metavar="SECONDS")
    audio_lookahead: int | None = option(
        help="frames of audio after a chunk its features see; more is closer to whole-file features, and later in a live session (12)",
        maximum=1000,
        metavar="FRAMES",
    )

    def torch_dtype(self, device: torch.device) -> torch.dtype:
        """``--dtype``: bf16 on CUDA and fp32 on the CPU unless named (the dataclass has checked the name)."""
        dtype: torch.dtype = torch_dtype(self.dtype, device)
        return dtype
