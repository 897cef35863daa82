"""Sizes of the InfiniteTalk architecture (Wan2.1-I2V DiT + audio adapter + Wan 2.1 VAE).

``real()`` gives the published 14B sizes; a loader reads the sizes of a
checkpoint from its config files and tensor shapes (``from_shapes``), so the
same code runs a shrunk test checkpoint and the real one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

#: Pixel frames of wav2vec2 context per video frame (offsets -2..+2).
AUDIO_WINDOW = 5
#: Pixel frames per latent frame after the first (the VAE's temporal stride).
VAE_TEMPORAL_STRIDE = 4
#: Pixel-to-latent spatial stride of the Wan 2.1 VAE.
VAE_SPATIAL_STRIDE = 8
#: Image tokens CLIP gives (16 x 16 patches + class token); hard-wired in the I2V cross-attention.
CLIP_TOKENS = 257
#: Text tokens the model attends to (prompts are zero-padded to it); diffusers hard-codes the same 512.
TEXT_LEN = 512


@dataclass(frozen=True)
class DiTConfig:
    """The Wan DiT's sizes, as in the original ``config.json`` (names kept)."""

    dim: int = 5120
    num_heads: int = 40
    num_layers: int = 40
    ffn_dim: int = 13824
    freq_dim: int = 256
    in_dim: int = 36
    out_dim: int = 16
    text_dim: int = 4096
    text_len: int = TEXT_LEN
    eps: float = 1e-6
    clip_dim: int = 1280
    patch_size: tuple[int, int, int] = (1, 2, 2)

    def __post_init__(self) -> None:
        if self.dim % self.num_heads:
            raise ValueError(f"dim {self.dim} is not divisible by num_heads {self.num_heads}")
        if self.text_len != TEXT_LEN:
            raise ValueError(f"text_len must be {TEXT_LEN} (the I2V cross-attention splits image and text tokens there), got {self.text_len}")

    def diffusers_kwargs(self) -> dict[str, object]:
        """Arguments of diffusers' ``WanTransformer3DModel`` for these sizes."""
        return {
            "patch_size": self.patch_size,
            "num_attention_heads": self.num_heads,
            "attention_head_dim": self.dim // self.num_heads,
            "in_channels": self.in_dim,
            "out_channels": self.out_dim,
            "text_dim": self.text_dim,
            "freq_dim": self.freq_dim,
            "ffn_dim": self.ffn_dim,
            "num_layers": self.num_layers,
            "cross_attn_norm": True,
            "qk_norm": "rms_norm_across_heads",
            "eps": self.eps,
            "image_dim": self.clip_dim,
            "added_kv_proj_dim": self.dim,
        }

    @classmethod
    def from_diffusers(cls, config: dict[str, Any]) -> DiTConfig:
        """From a Diffusers-format ``transformer/config.json`` (parsed JSON)."""
        heads = int(config["num_attention_heads"])
        return cls(
            dim=heads * int(config["attention_head_dim"]),
            num_heads=heads,
            num_layers=int(config["num_layers"]),
            ffn_dim=int(config["ffn_dim"]),
            freq_dim=int(config.get("freq_dim", 256)),
            in_dim=int(config["in_channels"]),
            out_dim=int(config["out_channels"]),
            text_dim=int(config.get("text_dim", 4096)),
            eps=float(config.get("eps", 1e-6)),
            clip_dim=int(config.get("image_dim") or 1280),
            patch_size=tuple(config.get("patch_size", (1, 2, 2))),
        )

    def to_original(self) -> dict[str, object]:
        """The original ``config.json`` keys (plus ``text_dim``, which the real file leaves at its default)."""
        return {
            "_class_name": "WanModel",
            "dim": self.dim,
            "eps": self.eps,
            "ffn_dim": self.ffn_dim,
            "freq_dim": self.freq_dim,
            "in_dim": self.in_dim,
            "model_type": "i2v",
            "num_heads": self.num_heads,
            "num_layers": self.num_layers,
            "out_dim": self.out_dim,
            "text_dim": self.text_dim,
            "text_len": self.text_len,
        }


@dataclass(frozen=True)
class AdapterConfig:
    """The audio adapter: wav2vec2 layers x width in, ``context_tokens`` tokens of ``output_dim`` per latent frame out."""

    blocks: int = 12
    channels: int = 768
    intermediate_dim: int = 512
    output_dim: int = 768
    context_tokens: int = 32

    @property
    def first_frame_inputs(self) -> int:
        return AUDIO_WINDOW * self.blocks * self.channels

    @property
    def later_frame_inputs(self) -> int:
        return (AUDIO_WINDOW + VAE_TEMPORAL_STRIDE - 1) * self.blocks * self.channels


@dataclass(frozen=True)
class VAEConfig:
    """The Wan 2.1 VAE; only the base width and latent channels vary between checkpoints."""

    base_dim: int = 96
    z_dim: int = 16
    dim_mult: tuple[int, ...] = (1, 2, 4, 4)
    num_res_blocks: int = 2
    temperal_downsample: tuple[bool, ...] = (False, True, True)
    latents_mean: tuple[float, ...] = (
        -0.7571, -0.7089, -0.9113, 0.1075, -0.1745, 0.9653, -0.1517, 1.5508,
        0.4134, -0.0715, 0.5517, -0.3632, -0.1922, -0.9497, 0.2503, -0.2921,
    )  # fmt: skip
    latents_std: tuple[float, ...] = (
        2.8184, 1.4541, 2.3275, 2.6558, 1.2196, 1.7708, 2.6052, 2.0743,
        3.2687, 2.1526, 2.8652, 1.5579, 1.6382, 1.1253, 2.8251, 1.9160,
    )  # fmt: skip

    def diffusers_kwargs(self) -> dict[str, object]:
        return {
            "base_dim": self.base_dim,
            "z_dim": self.z_dim,
            "dim_mult": list(self.dim_mult),
            "num_res_blocks": self.num_res_blocks,
            "attn_scales": [],
            "temperal_downsample": list(self.temperal_downsample),
            "dropout": 0.0,
            "latents_mean": list(self.latents_mean),
            "latents_std": list(self.latents_std),
        }


@dataclass(frozen=True)
class InfiniteTalkConfig:
    """Every size the family's networks need."""

    dit: DiTConfig = field(default_factory=DiTConfig)
    adapter: AdapterConfig = field(default_factory=AdapterConfig)
    vae: VAEConfig = field(default_factory=VAEConfig)

    @classmethod
    def real(cls) -> InfiniteTalkConfig:
        """Wan2.1-I2V-14B + InfiniteTalk, as published."""
        return cls()
