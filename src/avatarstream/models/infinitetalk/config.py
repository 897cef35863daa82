"""Sizes of the InfiniteTalk architecture (Wan2.1-I2V DiT + audio adapter + Wan 2.1 VAE; the VAE's are shared, in ``components.wan``).

``real()`` gives the published 14B sizes; a loader reads the sizes of a
checkpoint from its config files and tensor shapes (``from_shapes``), so the
same code runs a shrunk test checkpoint and the real one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from avatarstream.components.wan.config import TEXT_LEN, VAE_TEMPORAL_STRIDE, VAEConfig

#: Pixel frames of wav2vec2 context per video frame (offsets -2..+2).
AUDIO_WINDOW = 5
#: Image tokens CLIP gives (16 x 16 patches + class token); hard-wired in the I2V cross-attention.
CLIP_TOKENS = 257


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
class InfiniteTalkConfig:
    """Every size the family's networks need."""

    dit: DiTConfig = field(default_factory=DiTConfig)
    adapter: AdapterConfig = field(default_factory=AdapterConfig)
    vae: VAEConfig = field(default_factory=VAEConfig)

    @classmethod
    def real(cls) -> InfiniteTalkConfig:
        """Wan2.1-I2V-14B + InfiniteTalk, as published."""
        return cls()
