"""The bytes ``--quantize`` and ``--kv-cache-dtype fp8`` save at real size, per family and part (computed).

python -m avatarstream.families.quantized_bytes   # the table docs/quantization.md carries (tests/quantization checks it)

The networks are built on the meta device and quantized there by torchao itself, so the figures are its layout
(data and per-row scales), not an estimate; the caches follow LiveAvatar's memory model at its preset size and
FlashVSR's at 1280x768 (320x192 upscaled, its 3 slabs).
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

from avatarstream.families.flashhead.random_networks import REAL_DIT as FLASHHEAD_DIT
from avatarstream.families.flashvsr.memory import session_bytes
from avatarstream.families.flashvsr.options import DEFAULT_KV_RATIO
from avatarstream.families.infinitetalk import memory as infinitetalk
from avatarstream.families.liveavatar import memory as liveavatar
from avatarstream.models.flashhead.dit import FlashHeadDiT
from avatarstream.models.flashvsr.config import DiTConfig, LQProjConfig
from avatarstream.models.flashvsr.dit import FlashVSRDiT
from avatarstream.models.flashvsr.lq_proj import LQProjection
from avatarstream.models.liveavatar.config import S2VConfig
from avatarstream.runtime.quantize import quantized_bytes
from avatarstream.weights.sizing import GIB

HEADER = "| model | part | bf16 | `--quantize int8` | `--quantize fp8` / `--kv-cache-dtype fp8` |"
MODES = (None, "int8", "fp8")
#: FlashVSR's input whose 4x output the KV cache row is for (1280x768).
FLASHVSR_INPUT = (320, 192)


def _row(model: str, part: str, *figures: float | None) -> str:
    cells = [f"{figure / GIB:.1f} GiB" if figure is not None else "—" for figure in figures]
    return f"| `{model}` | {part} | " + " | ".join(cells) + " |"


def _held(build: Callable[[], nn.Module]) -> list[int]:
    """Bytes of the network ``build`` makes in bf16, then with its linear layers in int8 and in fp8 (built on the meta device)."""
    held = []
    for mode in MODES:
        with torch.device("meta"):
            network = build()
        held.append(quantized_bytes(network, mode, torch.bfloat16))
    return held


def markdown() -> str:
    it_counts = infinitetalk.real_weight_counts()
    it: dict[str | None, infinitetalk.NetworkBytes] = {None: infinitetalk.NetworkBytes.of(it_counts, 2)}
    it |= {m: infinitetalk.NetworkBytes.quantized(it_counts, m) for m in ("int8", "fp8")}
    la_counts, config = liveavatar.real_weight_counts(), S2VConfig.real()
    la: dict[str | None, tuple[int, int]] = {None: (la_counts.dit * 2, la_counts.text_encoder * 2)}
    la |= {m: liveavatar.quantized_weight_bytes(m) for m in ("int8", "fp8")}
    la_rest = (la_counts.vae + la_counts.audio_encoder) * 2
    size = liveavatar.PRESET.size
    caches, sink = liveavatar.kv_bytes(config, size, 2)
    fp8_caches, fp8_sink = liveavatar.kv_bytes(config, size, 1, scaled=True)
    modes = MODES
    vsr_config, (width, height) = DiTConfig(), FLASHVSR_INPUT
    vsr_kv, vsr_fp8_kv = (session_bytes(width, height, vsr_config, DEFAULT_KV_RATIO, 2, dtype).kv_cache for dtype in (None, "fp8"))
    lines = [
        HEADER,
        "|---|---|---:|---:|---:|",
        _row("infinitetalk", "DiT (Wan2.1-I2V-14B + audio adapter)", *(it[m].dit for m in modes)),
        _row("infinitetalk", "text encoder (UMT5-XXL)", *(it[m].text for m in modes)),
        _row("infinitetalk", "all weights (CLIP bf16, VAE and wav2vec2 float32, unchanged)", *(it[m].dit + it[m].others for m in modes)),
        _row("liveavatar", "DiT (Wan2.2-S2V-14B, LoRA merged)", *(la[m][0] for m in modes)),
        _row("liveavatar", "text encoder (umT5-XXL)", *(la[m][1] for m in modes)),
        _row("liveavatar", "all weights (VAE and wav2vec2 bf16, unchanged)", *(sum(la[m]) + la_rest for m in modes)),
        _row("liveavatar", f"4 step caches at {size[0]}x{size[1]}", caches, None, fp8_caches),
        _row("liveavatar", f"sink at {size[0]}x{size[1]} (held twice at its refresh)", sink, None, fp8_sink),
        _row("flashvsr", "DiT (Wan2.1-T2V-1.3B, `flashvsr_dit`)", *_held(lambda: FlashVSRDiT(vsr_config))),
        _row("flashvsr", "LQ projection (`flashvsr_lq_proj`)", *_held(lambda: LQProjection(LQProjConfig()))),
        _row("flashvsr", f"KV cache at {width * 4}x{height * 4} ({DEFAULT_KV_RATIO} slabs, one session)", vsr_kv, None, vsr_fp8_kv),
        _row("flashhead", "DiT, Pro (1.3B + audio projection)", *_held(lambda: FlashHeadDiT(FLASHHEAD_DIT["pro"]))),
        _row("flashhead", "DiT, Lite", *_held(lambda: FlashHeadDiT(FLASHHEAD_DIT["lite"]))),
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    print(markdown())
