"""The FlashVSR upscaler's options: precision and quantization, decoder mode, and the sparse attention's settings (no torch import here)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from avatarstream.families.options import DTYPE_NAMES, FamilyOptions, option, torch_dtype
from avatarstream.families.quantization import quantize_modules_option, quantize_option

if TYPE_CHECKING:  # the CLI reads these options to build its flags: torch loads only when a model does
    import torch

MODES = ("tiny", "full")
DEFAULT_MODE = "tiny"
DEFAULT_SPARSE_RATIO = 2.0
DEFAULT_LOCAL_RANGE = 11
DEFAULT_KV_RATIO = 3
DEFAULT_COLOR_FIX = True
#: What --upscale-quantize applies to unless --upscale-quantize-modules says otherwise: the modules with linear layers (the decoder keeps its precision).
QUANTIZED_BY_DEFAULT = ("flashvsr_dit", "flashvsr_lq_proj")
#: How the DiT's KV cache may be held: a float dtype, or fp8 (e4m3 with a scale per token and head).
KV_CACHE_DTYPES = (*DTYPE_NAMES, "fp8")


@dataclass(frozen=True)
class StreamSettings:
    """``FlashVSRStream``'s tuning, every one set: the attention's sparsity and window, the KV cache's slabs, the colour fix."""

    sparse_ratio: float
    local_range: int
    kv_ratio: int
    color_fix: bool


@dataclass(frozen=True)
class FlashVSROptions(FamilyOptions):
    """Unset options take the reference example's values."""

    dtype: str | None = option(help="weight precision (default: bf16 on CUDA, fp32 on the CPU)", choices=DTYPE_NAMES, scope="load")
    quantize: str | None = quantize_option()
    quantize_modules: str | None = quantize_modules_option(QUANTIZED_BY_DEFAULT)
    mode: str | None = option(help="decoder: tiny (the TCDecoder, fast; the default) or full (the Wan 2.1 VAE, Wan2.1_VAE.pth)", choices=MODES, scope="load")
    sparse_ratio: float | None = option(
        help=f"attention sparsity: top-k blocks scale with it (1.5 faster, 2.0 more stable; {DEFAULT_SPARSE_RATIO:g})", minimum=0.1, maximum=100.0
    )
    local_range: int | None = option(
        help=f"attention window, in 128-pixel windows across (9 sharper, 11 more stable; {DEFAULT_LOCAL_RANGE})", minimum=1, maximum=255, metavar="N"
    )
    kv_ratio: int | None = option(help=f"time slabs (2 latent frames each) the KV cache keeps ({DEFAULT_KV_RATIO})", minimum=1, maximum=64, metavar="N")
    kv_cache_dtype: str | None = option(
        help="how the DiT's KV cache is held: fp8 (e4m3 with a scale per token and head, dequantized when a layer attends: about half "
        "of bf16's bytes) or a float dtype (default: the weights' precision)",
        choices=KV_CACHE_DTYPES,
    )
    color_fix: bool | None = option(help="match each output frame's colour statistics to its upscaled input frame (adain; on)")

    def torch_dtype(self, device: torch.device) -> torch.dtype:
        """``--dtype``: bf16 on CUDA and fp32 on the CPU unless named."""
        dtype: torch.dtype = torch_dtype(self.dtype, device)
        return dtype

    def settings(self) -> StreamSettings:
        """The stream's settings, unset ones at their defaults."""
        return StreamSettings(
            sparse_ratio=DEFAULT_SPARSE_RATIO if self.sparse_ratio is None else self.sparse_ratio,
            local_range=DEFAULT_LOCAL_RANGE if self.local_range is None else self.local_range,
            kv_ratio=DEFAULT_KV_RATIO if self.kv_ratio is None else self.kv_ratio,
            color_fix=DEFAULT_COLOR_FIX if self.color_fix is None else self.color_fix,
        )

    @property
    def decoder_mode(self) -> str:
        return self.mode or DEFAULT_MODE
