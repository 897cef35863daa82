"""Weight memory of the real InfiniteTalk checkpoint per precision and residency policy, computed from its config.

Every network is built on the meta device with the real sizes (no memory, no
download), so the figures are exact parameter counts, not estimates. Only
weights are counted: activations come on top and depend on resolution and
chunk length (the GPU benchmark measures them).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import lru_cache

import torch
from transformers import CLIPVisionModel, UMT5EncoderModel, Wav2Vec2Config, Wav2Vec2Model

from avatarstream.components.wan.text_encoder import umt5_config
from avatarstream.components.wan.vae import build_vae
from avatarstream.models.infinitetalk.config import InfiniteTalkConfig
from avatarstream.models.infinitetalk.dit import InfiniteTalkDiT, is_adapter_key
from avatarstream.models.infinitetalk.image_encoder import clip_vision_config
from avatarstream.runtime.quantize import parameter_bytes, quantized_bytes
from avatarstream.weights.sizing import GIB, Configuration, Option

#: Shards of the original Wan2.1-I2V-14B download (float32 on disk).
ORIGINAL_SHARDS = 7


@dataclass(frozen=True)
class WeightCounts:
    """Parameter counts of the real checkpoint's networks."""

    dit_base: int
    adapter: int
    dit_block: int  # one transformer block, its audio cross-attention included
    dit_outside_blocks: int
    vae: int
    audio_encoder: int
    text_encoder: int
    image_encoder: int

    @property
    def dit(self) -> int:
        return self.dit_base + self.adapter


def _count(network: torch.nn.Module) -> int:
    return sum(p.numel() for p in network.parameters())


def real_weight_counts(config: InfiniteTalkConfig | None = None) -> WeightCounts:
    config = config or InfiniteTalkConfig.real()
    with torch.device("meta"):
        dit = InfiniteTalkDiT(config.dit, config.adapter)
        counts = {k: v.numel() for k, v in dit.state_dict().items()}
        block = _count(dit.blocks[0])
        return WeightCounts(
            dit_base=sum(n for k, n in counts.items() if not is_adapter_key(k)),
            adapter=sum(n for k, n in counts.items() if is_adapter_key(k)),
            dit_block=block,
            dit_outside_blocks=sum(counts.values()) - block * len(dit.blocks),
            vae=_count(build_vae(config.vae)),
            audio_encoder=_count(Wav2Vec2Model(Wav2Vec2Config())),  # chinese-wav2vec2-base has wav2vec2-base's sizes
            text_encoder=_count(UMT5EncoderModel(umt5_config())),
            image_encoder=_count(CLIPVisionModel(clip_vision_config())),
        )


FLOAT32 = 4  # bytes per parameter
#: How the sizing table names the weights of each ``--quantize`` mode (None: as loaded on CUDA).
WEIGHTS: dict[str | None, str] = {None: "bf16", "int8": "int8 (DiT and UMT5)", "fp8": "fp8 (DiT and UMT5)"}
#: Processes the sizing table shards the DiT over (sp layouts every preset takes: 40 heads, 9 latent frames or more).
SHARDED_GPUS = (2, 4, 8)
STREAMED_NOTE = "copies the DiT over PCIe on every forward: slow (below)"


@dataclass(frozen=True)
class NetworkBytes:
    """Each network's bytes at one ``--dtype``: the VAE and wav2vec2 stay float32 at any, as the reference keeps them."""

    dit: int
    block: int
    outside: int
    vae: int
    audio: int
    text: int
    image: int

    @classmethod
    def of(cls, counts: WeightCounts, bytes_per_param: int) -> NetworkBytes:
        b = bytes_per_param
        return cls(
            counts.dit * b, counts.dit_block * b, counts.dit_outside_blocks * b, counts.vae * FLOAT32, counts.audio_encoder * FLOAT32,
            counts.text_encoder * b, counts.image_encoder * b,
        )  # fmt: skip

    @classmethod
    def quantized(cls, counts: WeightCounts, mode: str) -> NetworkBytes:
        """bf16 bytes with the DiT and the text encoder as ``--quantize mode`` holds them (their linear layers in int8 or fp8
        and a scale per row)."""
        dit, block, outside, text = quantized_parts(mode)
        return dataclasses.replace(cls.of(counts, 2), dit=dit, block=block, outside=outside, text=text)

    @property
    def others(self) -> int:
        return self.vae + self.audio + self.text + self.image


@lru_cache
def quantized_parts(mode: str) -> tuple[int, int, int, int]:
    """Bytes of the real DiT, one of its blocks, the rest of it, and UMT5, in bf16 with their linear layers quantized by
    ``mode`` (built on the meta device and quantized by torchao there)."""
    config = InfiniteTalkConfig.real()
    with torch.device("meta"):
        dit = InfiniteTalkDiT(config.dit, config.adapter)
        text = UMT5EncoderModel(umt5_config())
    total = quantized_bytes(dit, mode, torch.bfloat16)
    block = parameter_bytes(dit.blocks[0])
    return total, block, total - block * len(dit.blocks), quantized_bytes(text, mode, torch.bfloat16)


def policy_table(counts: WeightCounts, bytes_per_param: int, gpus: int = 8) -> list[tuple[str, float, float]]:
    """(policy, device GiB, pinned host GiB) for the weights of a render, DiT policy as named, the rest resident.

    ``offloaded`` keeps one network at a time on the device (the largest, the
    DiT, plus the next stage's, which is prefetched while the DiT finishes);
    ``streamed:N`` keeps N DiT blocks and the DiT's non-block weights;
    ``sharded`` splits the DiT over ``gpus`` ranks and gathers one block (plus
    the prefetched next one) at a time.
    """
    s = NetworkBytes.of(counts, bytes_per_param)
    total = s.dit + s.others
    rows = [
        ("resident (everything on the device)", total, 0),
        ("DiT resident, text encoder offloaded", total - s.text, s.text),
        ("offloaded (everything)", s.dit + s.vae, total),
        ("DiT streamed:2, rest resident", s.others + s.outside + 2 * s.block, s.dit),
        ("DiT streamed:2, rest offloaded", s.outside + 2 * s.block + s.vae, total),
        (f"DiT sharded over {gpus} GPUs, rest resident", s.others + s.dit / gpus + 2 * s.block, 0),
    ]
    return [(name, device / GIB, host / GIB) for name, device, host in rows]


def sizing(counts: WeightCounts, bytes_per_param: int = 2, mode: str | None = None) -> Configuration:
    """The ways to run the model for the sizing table, most preferred first: the same weights for either preset.

    The text encoder stays resident in all of them: offloaded, it visits at every session start while the DiT is on
    the device, so it lowers what the chunk loop holds but never the peak. ``mode``: ``--quantize``'s (the DiT and the
    text encoder in bf16 otherwise); quantized weights cannot be sharded, so those ways are left out then.
    """
    s = NetworkBytes.of(counts, bytes_per_param) if mode is None else NetworkBytes.quantized(counts, mode)
    rest = (("text encoder", s.text / GIB), ("image encoder, VAE, audio encoder", (s.image + s.vae + s.audio) / GIB))
    flags = f"--quantize {mode}" if mode else ""

    def option(gpus: int, parallel: str, residency: str, dit: str, dit_bytes: float, note: str = "") -> Option:
        return Option(gpus, parallel, residency, ((dit, dit_bytes / GIB), *rest), note=note, flags=flags)

    sharded = () if mode else tuple(
        option(n, f"sp={n}", "dit=sharded", f"DiT shard 1/{n} + 2 gathered blocks", s.dit / n + 2 * s.block, "sharded over the sp group")
        for n in SHARDED_GPUS
    )  # fmt: skip
    return Configuration(
        "infinitetalk",
        "`infinitetalk`, either preset",
        (
            option(1, "", "default=resident", "DiT", s.dit),
            option(1, "", "dit=streamed:2", "DiT outside its blocks + 2 block slots", s.outside + 2 * s.block, STREAMED_NOTE),
            option(2, "sp=2", "default=resident", "DiT", s.dit, "or any layout of section 3: every GPU holds the whole model"),
            *sharded,
        ),
        WEIGHTS[mode],
    )


def loading_peak_gib(counts: WeightCounts, bytes_per_param: int) -> float:
    """Host memory while loading the DiT: the model at its precision plus one float32 shard of the original download."""
    shard = counts.dit_base * 4 / ORIGINAL_SHARDS
    return (counts.dit * bytes_per_param + shard) / GIB


def markdown(counts: WeightCounts) -> str:
    """The tables of docs/models/infinitetalk.md."""
    lines = [
        "| network | parameters | bf16 | fp32 |",
        "|---|---:|---:|---:|",
    ]
    parts = {
        "DiT (Wan2.1-I2V-14B base)": counts.dit_base,
        "audio adapter (InfiniteTalk)": counts.adapter,
        "VAE (Wan 2.1)": counts.vae,
        "audio encoder (chinese-wav2vec2-base)": counts.audio_encoder,
        "text encoder (UMT5-XXL encoder)": counts.text_encoder,
        "image encoder (CLIP ViT-H/14 vision)": counts.image_encoder,
    }
    for name, n in parts.items():
        low = FLOAT32 if n in (counts.vae, counts.audio_encoder) else 2  # the VAE and wav2vec2 stay float32
        lines.append(f"| {name} | {n / 1e9:.3f} B | {n * low / GIB:.1f} GiB | {n * FLOAT32 / GIB:.1f} GiB |")
    lines += ["", "| weights on the device, by policy | bf16 device | bf16 pinned host | fp32 device | fp32 pinned host |", "|---|---:|---:|---:|---:|"]
    for (name, d2, h2), (_, d4, h4) in zip(policy_table(counts, 2), policy_table(counts, 4), strict=True):
        lines.append(f"| {name} | {d2:.1f} GiB | {h2:.1f} GiB | {d4:.1f} GiB | {h4:.1f} GiB |")
    lines += [
        "",
        (
            f"Peak host memory while loading the DiT: {loading_peak_gib(counts, 2):.1f} GiB in bf16, {loading_peak_gib(counts, 4):.1f} GiB in fp32 "
            f"(the model plus one float32 shard of the {ORIGINAL_SHARDS}-shard download)."
        ),
    ]
    return "\n".join(lines)


if __name__ == "__main__":  # python -m avatarstream.families.infinitetalk.memory
    print(markdown(real_weight_counts()))
