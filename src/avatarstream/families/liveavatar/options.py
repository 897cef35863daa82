"""The LiveAvatar family's options: how its weights are read, its preset, and how blocks are generated."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from avatarstream.families.liveavatar.presets import PRESETS
from avatarstream.families.options import DTYPE_NAMES, FamilyOptions, Size, option, torch_dtype
from avatarstream.families.quantization import quantize_modules_option, quantize_option

if TYPE_CHECKING:  # the CLI reads these options to build its flags: torch loads only when a model does
    import torch

DTYPES = DTYPE_NAMES
#: What --quantize applies to unless --quantize-modules says otherwise: the DiT and umT5 (the VAE and wav2vec2 keep their precision).
QUANTIZED_BY_DEFAULT = ("dit", "text_encoder")
#: How the KV caches and the sink may be stored: a float dtype, or fp8 (e4m3 with a scale per token and head).
KV_CACHE_DTYPES = (*DTYPE_NAMES, "fp8")


@dataclass(frozen=True)
class LiveAvatarOptions(FamilyOptions):
    """Every setting of the preset can be overridden one by one; unset ones take the preset's."""

    presets: ClassVar[dict[str, dict[str, Any]]] = {name: dataclasses.asdict(preset) for name, preset in PRESETS.items()}

    dtype: str | None = option(help="weight precision (default: bf16 on CUDA, fp32 on the CPU)", choices=DTYPES, scope="load")
    base: Path | None = option(help="the Wan2.2-S2V-14B folder, if not under --weights", scope="load", metavar="DIR")
    lora: Path | None = option(help="liveavatar.safetensors (or its folder), if not under --weights", scope="load", metavar="PATH")
    lora_mode: str | None = option(
        help="merge the LoRA into the weights at load (the default, fastest) or keep it beside them", choices=("merged", "unmerged"), scope="load"
    )
    lora_alpha: float | None = option(help="LoRA scale numerator (LiveAvatar's training config: 64)", minimum=0.0, maximum=10000.0, scope="load", metavar="A")
    quantize: str | None = quantize_option()
    quantize_modules: str | None = quantize_modules_option(QUANTIZED_BY_DEFAULT)
    preset: str | None = option(help="liveavatar (704x384, 4 steps; the default)", choices=tuple(PRESETS), flag="--model-preset")
    size: Size | None = option(help="output size in multiples of 64 (704x384)")
    steps: int | None = option(help="distilled Euler steps, one KV cache each (4)", minimum=1, maximum=50, metavar="N")
    shift: float | None = option(help="time shift of the flow-matching schedule (3)", minimum=0.01, maximum=100.0, metavar="S")
    cache_blocks: int | None = option(help="blocks of 12 frames each rolling KV cache holds (4, as trained)", minimum=1, maximum=64, metavar="N")
    kv_cache_dtype: str | None = option(
        help="how the KV caches and the sink are stored: fp8 (e4m3 with a scale per token and head, dequantized at use: about half "
        "of bf16's bytes) or a float dtype (default: the weights' precision)",
        choices=KV_CACHE_DTYPES,
    )
    audio_window_s: float | None = option(
        help="seconds of audio wav2vec2 sees per block (bounded; 4)", minimum=0.5, maximum=600, flag="--audio-window", metavar="SECONDS"
    )
    audio_lookahead: int | None = option(help="frames of audio after a block its features see (8)", minimum=0, maximum=250, metavar="FRAMES")
    sink_offsets: str | None = option(
        help="the reference's sink offsets, comma-separated, used call by call and cycled (default: drawn from the seed, 4..30)", metavar="N,N,..."
    )
    start_position: int | None = option(
        help="latent-frame position the stream's RoPE starts at (0); positions have no end", minimum=0, maximum=2**40, metavar="FRAME"
    )

    def kv_storage_dtype(self) -> torch.dtype | None:
        """``--kv-cache-dtype`` as a torch dtype (fp8: ``float8_e4m3fn``); None: the weights' precision."""
        from avatarstream.components.kv_storage import named

        return named(self.kv_cache_dtype)

    def torch_dtype(self, device: torch.device) -> torch.dtype:
        """``--dtype``: bf16 on CUDA and fp32 on the CPU unless named."""
        dtype: torch.dtype = torch_dtype(self.dtype, device)
        return dtype
