"""Sizes of the SoulX-FlashHead DiT (``WanModelAudioProject``), read from a variant folder's ``config.json``.

The published ``config.json`` states the Wan sizes only; the reference
hard-codes its audio adapter (a 5-frame window, 512 wide, 32 tokens of the DiT's
width, 12 wav2vec2 layers of 768 channels). A shrunk checkpoint states them
under the ``audio_*`` keys, and the real one takes these defaults.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

#: Video frames of audio each frame's window covers (the reference's ``audio_window``), centred on the frame.
AUDIO_WINDOW = 5
#: The audio adapter's sizes the real config.json does not state: (key, the reference's value); the output width is the DiT's.
ADAPTER_DEFAULTS = {"audio_intermediate_dim": 512, "audio_context_tokens": 32, "audio_blocks": 12, "audio_channels": 768, "audio_emb_in_dim": 768}


@dataclass(frozen=True)
class FlashHeadConfig:
    """The DiT's sizes under the names of its ``config.json`` (Pro's defaults)."""

    dim: int = 1536
    in_dim: int = 32
    out_dim: int = 16
    ffn_dim: int = 8960
    freq_dim: int = 256
    text_dim: int = 4096
    num_heads: int = 12
    num_layers: int = 30
    eps: float = 1e-6
    patch_size: tuple[int, int, int] = (1, 2, 2)
    vae_stride: tuple[int, int, int] = (4, 8, 8)
    audio_intermediate_dim: int = 512
    audio_output_dim: int = 1536
    audio_context_tokens: int = 32
    audio_blocks: int = 12  # wav2vec2 hidden states per frame (layers 1..L)
    audio_channels: int = 768  # wav2vec2's width
    audio_emb_in_dim: int = 768  # ``audio_emb``: in the checkpoint, unused by the forward

    def __post_init__(self) -> None:
        if self.dim % self.num_heads or (self.dim // self.num_heads) % 2:
            raise ValueError(f"dim {self.dim} must split into {self.num_heads} heads of an even size")
        if self.audio_output_dim != self.dim:
            raise ValueError(f"the audio tokens must be as wide as the DiT ({self.dim}), got audio_output_dim {self.audio_output_dim}")
        if self.vae_stride[0] < 2:
            raise ValueError(f"the adapter groups frames by the VAE's temporal stride, which must be 2 or more, got {self.vae_stride[0]}")

    @property
    def head_dim(self) -> int:
        return self.dim // self.num_heads

    @property
    def latent_channels(self) -> int:
        return self.out_dim

    def latent_frames(self, frames: int) -> int:
        """Latent frames of ``frames`` video frames (1 + stride k)."""
        return (frames - 1) // self.vae_stride[0] + 1

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> FlashHeadConfig:
        """From a variant's ``config.json`` (parsed, its values checked by the loader); adapter sizes default as the reference hard-codes them."""
        dim = int(raw["dim"])
        adapter = {key: int(raw.get(key, default)) for key, default in ADAPTER_DEFAULTS.items()}
        return cls(
            dim=dim,
            in_dim=int(raw["in_dim"]),
            out_dim=int(raw["out_dim"]),
            ffn_dim=int(raw["ffn_dim"]),
            freq_dim=int(raw["freq_dim"]),
            text_dim=int(raw.get("text_dim", 4096)),
            num_heads=int(raw["num_heads"]),
            num_layers=int(raw["num_layers"]),
            eps=float(raw.get("eps", 1e-6)),
            patch_size=tuple(int(v) for v in raw["patch_size"]),  # type: ignore[arg-type]
            vae_stride=tuple(int(v) for v in raw["vae_stride"]),  # type: ignore[arg-type]
            audio_output_dim=int(raw.get("audio_output_dim", dim)),
            **adapter,
        )

    def to_json(self) -> dict[str, Any]:
        """The ``config.json`` of these sizes as the reference writes it, adapter sizes included (``from_json`` reads it back)."""
        return {
            "_class_name": "WanModelAudioProject", "_diffusers_version": "0.35.2", "dim": self.dim, "ffn_dim": self.ffn_dim,
            "freq_dim": self.freq_dim, "eps": self.eps, "num_heads": self.num_heads, "num_layers": self.num_layers,
            "text_dim": self.text_dim, "has_image_input": False, "audio_intermediate_dim": self.audio_intermediate_dim,
            "audio_output_dim": self.audio_output_dim, "audio_context_tokens": self.audio_context_tokens, "audio_blocks": self.audio_blocks,
            "audio_channels": self.audio_channels, "audio_emb_in_dim": self.audio_emb_in_dim, "in_dim": self.in_dim, "out_dim": self.out_dim,
            "vae_stride": list(self.vae_stride), "patch_size": list(self.patch_size),
        }  # fmt: skip
