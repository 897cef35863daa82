"""Sizes of the LiveAvatar architecture (Wan2.2-S2V DiT, block-causal), read from the checkpoint's ``config.json``.

``real()`` gives the published 14B sizes; a loader builds the config from the
folder's ``config.json`` (``from_json``), so one code path runs a shrunk test
checkpoint and the real one. The streaming constants (3 latent frames per
block, 73 motion frames, the sink's temporal position 30) are the reference
pipeline's, not the checkpoint's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from avatarstream.components.wan.config import TEXT_LEN

#: Latent frames one causal block generates (12 video frames).
BLOCK_FRAMES = 3
#: Video frames of motion context the model was trained with, and their latent count ((73 + 3) // 4).
MOTION_FRAMES = 73
LAT_MOTION_FRAMES = (MOTION_FRAMES + 3) // 4
#: Temporal RoPE position of the reference frame in the sink, and the range of its random look-ahead.
SINK_REF_POSITION = 30
SINK_OFFSET_RANGE = (4, 30)
#: FramePack buckets of motion latent frames, nearest first: 1 frame at full size, 2 at 1/2, 16 at 1/4.
FRAMEPACK_BUCKETS = (1, 2, 16)


@dataclass(frozen=True)
class S2VConfig:
    """The S2V DiT's sizes, under the names of the original ``config.json``."""

    dim: int = 5120
    num_heads: int = 40
    num_layers: int = 40
    ffn_dim: int = 13824
    freq_dim: int = 256
    in_dim: int = 16
    out_dim: int = 16
    cond_dim: int = 16
    audio_dim: int = 1024
    audio_layers: int = 25
    num_audio_token: int = 4
    audio_inject_layers: tuple[int, ...] = (0, 4, 8, 12, 16, 20, 24, 27, 30, 33, 36, 39)
    enable_adain: bool = True
    text_dim: int = 4096  # the reference ignores config.json's value (always 4096); read from the weights' shape
    text_len: int = TEXT_LEN
    eps: float = 1e-6
    patch_size: tuple[int, int, int] = (1, 2, 2)
    rope_theta: float = 10000.0

    def __post_init__(self) -> None:
        if self.dim % self.num_heads or (self.dim // self.num_heads) % 2:
            raise ValueError(f"dim {self.dim} must split into {self.num_heads} heads of an even size")
        if self.patch_size != (1, 2, 2):
            raise ValueError(f"the S2V DiT patches (1, 2, 2) (FramePack and the sink assume it), got {self.patch_size}")
        bad = [i for i in self.audio_inject_layers if not 0 <= i < self.num_layers]
        if bad:
            raise ValueError(f"audio_inject_layers {bad} are outside the {self.num_layers} layers")

    @property
    def head_dim(self) -> int:
        return self.dim // self.num_heads

    @classmethod
    def real(cls) -> S2VConfig:
        return cls()

    def to_original(self) -> dict[str, Any]:
        """The original ``config.json`` of these sizes (what ``from_json`` reads back)."""
        return {
            "_class_name": "WanModel_S2V", "model_type": "s2v", "dim": self.dim, "num_heads": self.num_heads,
            "num_layers": self.num_layers, "ffn_dim": self.ffn_dim, "freq_dim": self.freq_dim, "in_dim": self.in_dim,
            "out_dim": self.out_dim, "cond_dim": self.cond_dim, "audio_dim": self.audio_dim, "num_audio_token": self.num_audio_token,
            "audio_inject_layers": list(self.audio_inject_layers), "enable_adain": self.enable_adain, "adain_mode": "attn_norm",
            "enable_framepack": True, "framepack_drop_mode": "padd", "enable_motioner": False, "add_last_motion": True,
            "zero_timestep": True, "zero_init": True, "text_len": self.text_len, "text_dim": 4096, "eps": self.eps,
            "patch_size": list(self.patch_size), "qk_norm": True, "cross_attn_norm": True, "window_size": [-1, -1],
        }  # fmt: skip

    @classmethod
    def from_json(cls, raw: dict[str, Any], audio_layers: int, text_dim: int) -> S2VConfig:
        """From the original ``config.json`` (parsed); ``audio_layers`` (wav2vec2's hidden states) and ``text_dim`` from tensor shapes."""
        for key, wanted in (("model_type", "s2v"), ("enable_framepack", True), ("enable_motioner", False), ("zero_timestep", True)):
            if raw.get(key, wanted) != wanted:
                raise ValueError(f"{key} is {raw.get(key)!r}; the LiveAvatar port runs {key}={wanted!r} (Wan2.2-S2V-14B)")
        if raw.get("adain_mode", "attn_norm") != "attn_norm":
            raise ValueError(f"adain_mode {raw.get('adain_mode')!r} is not supported; Wan2.2-S2V-14B uses 'attn_norm'")
        return cls(
            dim=int(raw["dim"]),
            num_heads=int(raw["num_heads"]),
            num_layers=int(raw["num_layers"]),
            ffn_dim=int(raw["ffn_dim"]),
            freq_dim=int(raw.get("freq_dim", 256)),
            in_dim=int(raw.get("in_dim", 16)),
            out_dim=int(raw.get("out_dim", 16)),
            cond_dim=int(raw.get("cond_dim", 16)),
            audio_dim=int(raw["audio_dim"]),
            audio_layers=audio_layers,
            num_audio_token=int(raw.get("num_audio_token", 4)),
            audio_inject_layers=tuple(int(i) for i in raw["audio_inject_layers"]),
            enable_adain=bool(raw.get("enable_adain", True)),
            text_dim=text_dim,
            text_len=int(raw.get("text_len", TEXT_LEN)),
            eps=float(raw.get("eps", 1e-6)),
        )


@dataclass(frozen=True)
class StreamGeometry:
    """Token counts of one resolution: what the KV caches and the sink hold (computed, never hard-coded)."""

    lat_height: int
    lat_width: int
    cache_blocks: int = 4  # blocks the rolling cache holds (the reference: one clip of 12 latent frames)
    buckets: tuple[int, ...] = field(default=FRAMEPACK_BUCKETS)

    def __post_init__(self) -> None:
        if self.lat_height % 8 or self.lat_width % 8:
            raise ValueError(f"latent size {self.lat_height}x{self.lat_width} must be a multiple of 8 (pixels: of 64)")
        if self.cache_blocks < 1:
            raise ValueError(f"the rolling cache holds 1 block or more, got {self.cache_blocks}")

    @property
    def frame_tokens(self) -> int:
        return (self.lat_height // 2) * (self.lat_width // 2)

    @property
    def block_tokens(self) -> int:
        return BLOCK_FRAMES * self.frame_tokens

    @property
    def cache_rows(self) -> int:
        return self.cache_blocks * self.block_tokens

    @property
    def motion_tokens(self) -> int:
        """FramePack tokens: the nearest frame at full size, 2 frames at 1/2 (one token frame), 16 at 1/4 (4 token frames)."""
        h, w = self.lat_height, self.lat_width
        near, mid, far = self.buckets
        return near * (h // 2) * (w // 2) + (mid // 2) * (h // 4) * (w // 4) + (far // 4) * (h // 8) * (w // 8)

    @property
    def sink_tokens(self) -> int:
        """The reference frame's tokens plus the motion tokens."""
        return self.frame_tokens + self.motion_tokens
