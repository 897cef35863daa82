"""Memory of the real LiveAvatar model, computed from its config: weights (meta-built, exact counts) and KV caches.

The KV caches are the block-causal model's working memory: per denoising step
one rolling cache of ``cache_blocks`` blocks (keys and values of every layer),
plus one attention sink (reference frame + FramePack motion tokens) shared by
the steps. Both follow from the resolution alone; nothing grows with the
stream. Activations come on top (the GPU benchmark measures the peak).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from transformers import UMT5EncoderModel, Wav2Vec2Config, Wav2Vec2Model

from avatarstream.components.wan.config import VAE_SPATIAL_STRIDE, VAEConfig
from avatarstream.components.wan.text_encoder import umt5_config
from avatarstream.components.wan.vae import build_vae
from avatarstream.models.liveavatar.config import S2VConfig, StreamGeometry

GB = 1e9
GIB = 2**30
#: Sizes the table lists (width, height), all multiples of 64; 704x384 is the preset.
SIZES = ((704, 384), (832, 448), (1024, 576), (1280, 704))
PRECISIONS = {"bf16": 2, "fp32": 4}
#: wav2vec2-large-xlsr-53's sizes (24 layers of 1024).
WAV2VEC2_LARGE: dict[str, Any] = {"hidden_size": 1024, "num_hidden_layers": 24, "num_attention_heads": 16, "intermediate_size": 4096}
H200_GIB = 139.8  # what torch reports as an H200's total memory


def kv_bytes(config: S2VConfig, size: tuple[int, int], bytes_per_value: int, steps: int = 4, cache_blocks: int = 4) -> tuple[int, int]:
    """(all step caches, the sink) in bytes at ``size`` (width, height)."""
    width, height = size
    geometry = StreamGeometry(height // VAE_SPATIAL_STRIDE, width // VAE_SPATIAL_STRIDE, cache_blocks)
    per_row = 2 * config.num_layers * config.dim * bytes_per_value  # keys and values of every layer
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


def markdown(config: S2VConfig, counts: WeightCounts) -> str:
    """The tables of docs/models/liveavatar.md."""
    lines = ["| network | parameters | bf16 | fp32 |", "|---|---:|---:|---:|"]
    for name, n in (("S2V DiT (LoRA merged)", counts.dit), ("VAE (Wan 2.1)", counts.vae), ("wav2vec2-large-xlsr-53", counts.audio_encoder),
                    ("umT5-XXL encoder", counts.text_encoder)):  # fmt: skip
        lines.append(f"| {name} | {n / 1e9:.3f} B | {n * 2 / GB:.1f} GB | {n * 4 / GB:.1f} GB |")
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
            cells += [f"{steps / GB:.1f} GB", f"{sink / GB:.2f} GB"]
        lines.append(f"| {size[0]}x{size[1]} | {per_frame} | " + " | ".join(cells) + " |")
    steps, sink = kv_bytes(config, SIZES[0], 2)
    resident = counts.dit + counts.vae + counts.audio_encoder
    total = (resident * 2 + steps + sink) / GIB
    lines += [
        "",
        (
            f"One H200 ({H200_GIB:.0f} GiB) at 704x384 in bf16: DiT, VAE and wav2vec2 resident {resident * 2 / GIB:.1f} GiB + 4 step caches "
            f"{steps / GIB:.1f} GiB + sink {sink / GIB:.1f} GiB = {total:.1f} GiB, leaving {H200_GIB - total:.1f} GiB for activations; "
            f"umT5 ({counts.text_encoder * 2 / GIB:.1f} GiB in bf16) runs once per session and can be offloaded (`--residency text_encoder=offloaded`)."
        ),
    ]
    return "\n".join(lines)


if __name__ == "__main__":  # python -m avatarstream.families.liveavatar.memory
    print(markdown(S2VConfig.real(), real_weight_counts()))
