"""Memory of the real LiveAvatar model, computed from its config: weights (meta-built, exact counts) and KV caches.

The KV caches are the block-causal model's working memory: per denoising step
one rolling cache of ``cache_blocks`` blocks (keys and values of every layer),
plus one attention sink (reference frame + FramePack motion tokens) shared by
the steps. Both follow from the resolution alone; nothing grows with the
stream. Activations come on top (the GPU benchmark measures the peak).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import torch
from transformers import UMT5EncoderModel, Wav2Vec2Config, Wav2Vec2Model

from avatarstream.components.wan.config import VAE_SPATIAL_STRIDE, VAEConfig
from avatarstream.components.wan.text_encoder import umt5_config
from avatarstream.components.wan.vae import build_vae
from avatarstream.families.liveavatar.presets import PRESETS, Preset
from avatarstream.models.liveavatar.config import S2VConfig, StreamGeometry
from avatarstream.runtime.quantize import quantized_bytes
from avatarstream.weights.sizing import GIB, Configuration, Option

#: Sizes the table lists (width, height), all multiples of 64; 704x384 is the preset.
SIZES = ((704, 384), (832, 448), (1024, 576), (1280, 704))
PRECISIONS = {"bf16": 2, "fp32": 4}
#: Bytes of the scale fp8 caches keep per token and head (float32).
FP8_SCALE_BYTES = 4
#: How the sizing table names the weights and caches of each ``--quantize`` mode (None: bf16 as loaded on CUDA).
WEIGHTS: dict[str | None, str] = {None: "bf16", "int8": "int8 (DiT and umT5), bf16 KV caches", "fp8": "fp8 (DiT and umT5), fp8 KV caches"}
#: wav2vec2-large-xlsr-53's sizes (24 layers of 1024).
WAV2VEC2_LARGE: dict[str, Any] = {"hidden_size": 1024, "num_hidden_layers": 24, "num_attention_heads": 16, "intermediate_size": 4096}
PRESET = PRESETS["liveavatar"]
#: The one sp size the real DiT takes (40 heads; a block's 3 latent frames split whole over the ranks).
SP = 2


def kv_bytes(config: S2VConfig, size: tuple[int, int], bytes_per_value: int, steps: int = 4, cache_blocks: int = 4, *, scaled: bool = False) -> tuple[int, int]:
    """(all step caches, the sink) in bytes at ``size`` (width, height); ``scaled``: fp8 storage's float32 scale per token
    and head on top (``--kv-cache-dtype fp8``, ``bytes_per_value`` 1)."""
    width, height = size
    geometry = StreamGeometry(height // VAE_SPATIAL_STRIDE, width // VAE_SPATIAL_STRIDE, cache_blocks)
    scales = config.num_heads * FP8_SCALE_BYTES if scaled else 0
    per_row = 2 * config.num_layers * (config.dim * bytes_per_value + scales)  # keys and values of every layer
    return steps * geometry.cache_rows * per_row, geometry.sink_tokens * per_row


@dataclass(frozen=True)
class WeightCounts:
    dit: int
    vae: int
    audio_encoder: int
    text_encoder: int


def _count(network: torch.nn.Module) -> int:
    return sum(p.numel() for p in network.parameters())


def real_weight_counts() -> WeightCounts:
    """Parameter counts of Wan2.2-S2V-14B's networks, built on the meta device."""
    from avatarstream.models.liveavatar.dit import S2VDiT

    with torch.device("meta"):
        return WeightCounts(
            dit=_count(S2VDiT(S2VConfig.real())),
            vae=_count(build_vae(VAEConfig())),
            audio_encoder=_count(Wav2Vec2Model(Wav2Vec2Config(**WAV2VEC2_LARGE))),
            text_encoder=_count(UMT5EncoderModel(umt5_config())),
        )


def sink_peak(sink: float, sp: int) -> float:
    """The most sink memory one rank holds: the refresh after the first clip computes the new sink whole (every rank does)
    while the old one, the rank's heads of it, is still held; under sp the rank then copies its heads out of the new one."""
    held = sink / sp
    return held + sink + (held if sp > 1 else 0)


@lru_cache
def quantized_weight_bytes(mode: str) -> tuple[int, int]:
    """Bytes of the real DiT and umT5 as ``--quantize mode`` holds them (bf16, their linear layers in int8 or fp8 with a
    scale per row; built on the meta device and quantized by torchao there)."""
    from avatarstream.models.liveavatar.dit import S2VDiT

    with torch.device("meta"):
        dit, umt5 = S2VDiT(S2VConfig.real()), UMT5EncoderModel(umt5_config())
    return quantized_bytes(dit, mode, torch.bfloat16), quantized_bytes(umt5, mode, torch.bfloat16)


def sizing(
    config: S2VConfig, counts: WeightCounts, size: tuple[int, int], bytes_per_value: int = 2, preset: Preset = PRESET, mode: str | None = None
) -> Configuration:
    """The ways to run the model at ``size`` for the sizing table, fewest GPUs first, umT5 resident before offloaded.

    Every process holds the whole DiT, VAE and wav2vec2 (``sp`` and ``steps`` split the work, not the weights); a rank
    holds the step caches of the steps it runs, for its heads, and the sink for its heads. The text encoder runs once
    per session before any cache exists, so offloading it takes its weights out of the chunk loop's peak. The streamed
    and sharded policies are left out: the sink prefill calls the last block's projections outside the block's forward,
    where neither policy brings its weights in. ``mode``: ``--quantize``'s for the DiT and umT5 (bf16 otherwise);
    ``fp8`` comes with fp8 KV caches and sink (``--kv-cache-dtype fp8``).
    """
    b, steps = bytes_per_value, preset.steps
    fp8_caches = mode == "fp8"
    caches, sink = kv_bytes(config, size, 1 if fp8_caches else b, steps, preset.cache_blocks, scaled=fp8_caches)
    dit, text = quantized_weight_bytes(mode) if mode else (counts.dit * b, counts.text_encoder * b)
    networks, umt5 = (dit + (counts.vae + counts.audio_encoder) * b) / GIB, text / GIB
    flags = f"--quantize {mode}" + (" --kv-cache-dtype fp8" if fp8_caches else "") if mode else ""
    options = []
    for gpus, parallel, mine, sp in (
        (1, "", steps, 1),
        (SP, f"sp={SP}", steps, SP),
        (steps, f"steps={steps}", 1, 1),
        (steps * SP, f"steps={steps},sp={SP}", 1, SP),
    ):
        heads = f" for 1/{sp} of the heads" if sp > 1 else ""
        held = (
            (f"{mine} step cache{'s' if mine > 1 else ''}{heads}", mine * caches / steps / sp / GIB),
            ("sink, old and new at its refresh", sink_peak(sink / GIB, sp)),
        )
        options.append(Option(gpus, parallel, "default=resident", (("DiT, VAE, wav2vec2, umT5", networks + umt5),), held, flags=flags))
        options.append(Option(gpus, parallel, "text_encoder=offloaded", (("DiT, VAE, wav2vec2", networks),), held, (("umT5", umt5),), flags=flags))
    name = f"`liveavatar` {size[0]}x{size[1]}" + (" (the preset)" if size == preset.size else "")
    return Configuration("liveavatar", name, tuple(options), WEIGHTS[mode])


def markdown(config: S2VConfig, counts: WeightCounts) -> str:
    """The tables of docs/models/liveavatar.md."""
    lines = ["| network | parameters | bf16 | fp32 |", "|---|---:|---:|---:|"]
    for name, n in (("S2V DiT (LoRA merged)", counts.dit), ("VAE (Wan 2.1)", counts.vae), ("wav2vec2-large-xlsr-53", counts.audio_encoder),
                    ("umT5-XXL encoder", counts.text_encoder)):  # fmt: skip
        lines.append(f"| {name} | {n / 1e9:.3f} B | {n * 2 / GIB:.1f} GiB | {n * 4 / GIB:.1f} GiB |")
    lines += [
        "",
        "| size (WxH) | tokens per latent frame | 4 step caches bf16 | sink bf16 | 4 step caches fp32 | sink fp32 |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for size in SIZES:
        per_frame = (size[0] // 16) * (size[1] // 16)
        cells = []
        for bytes_per_value in PRECISIONS.values():
            steps, sink = kv_bytes(config, size, bytes_per_value)
            cells += [f"{steps / GIB:.1f} GiB", f"{sink / GIB:.2f} GiB"]
        lines.append(f"| {size[0]}x{size[1]} | {per_frame} | " + " | ".join(cells) + " |")
    one_gpu = next(o for o in sizing(config, counts, PRESET.size).options if o.gpus == 1 and "offloaded" in o.residency)
    width, height = PRESET.size
    lines += [
        "",
        (
            f"One GPU at {width}x{height} in bf16, umT5 offloaded (`--residency text_encoder=offloaded`), in GiB: "
            f"{one_gpu.arithmetic()}. Activations are not counted."
        ),
    ]
    return "\n".join(lines)


if __name__ == "__main__":  # python -m avatarstream.families.liveavatar.memory
    print(markdown(S2VConfig.real(), real_weight_counts()))
