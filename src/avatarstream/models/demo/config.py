"""Configuration of the demo model family.

Frozen dataclasses so a config can be hashed, shared between modules and
saved as JSON next to the safetensors weights (`to_dict` / `from_dict`).
Defaults are sized so the whole family runs faster than real time at
256x256, 25 fps on a 2-core CPU; `DemoConfig.tiny()` is for fast tests.
"""

from __future__ import annotations

import dataclasses
import inspect
import math
from dataclasses import dataclass, field
from typing import Any

VAE_SPATIAL_FACTOR = 8
"""Spatial compression of the causal VAE (three 2x stages; not configurable)."""

SR_FACTOR = 2
"""Spatial factor the SR model lifts the base latent by."""

#: Upper bounds of a config read from a file (a weights folder is untrusted): generous, but they keep what is built
#: bounded; the loader then refuses a model larger than the machine's memory.
MAX_SIZE, MAX_LAYERS, MAX_SAMPLE_RATE, MAX_RATIO = 1 << 17, 1024, 384_000, 64.0


@dataclass(frozen=True)
class VAEConfig:
    latent_channels: int = 16
    encoder_channels: int = 64
    """Width of the per-frame encoder at 1/4 and 1/8 resolution."""
    decoder_channels: int = 48
    """Width of the decoder at latent resolution (where the causal convs are)."""
    decoder_up_channels: int = 16
    """Width of the decoder at 2x latent resolution, before the final pixel shuffle."""
    groups: int = 8


@dataclass(frozen=True)
class AudioEncoderConfig:
    n_mels: int = 64
    n_fft: int = 512
    win_length: int = 400
    mel_per_frame: int = 4
    """Mel hops per video frame; hop length = samples_per_frame // mel_per_frame."""
    conv_channels: int = 128
    conv_layers: int = 2
    """Valid kernel-3 convolutions over mel frames."""
    context_frames: int = 2
    """Video frames each side that a frame's window transformer sees."""
    tokens_per_frame: int = 4
    dim: int = 128
    layers: int = 1
    heads: int = 4


@dataclass(frozen=True)
class TextEncoderConfig:
    dim: int = 128
    layers: int = 2
    heads: int = 4
    max_length: int = 64


@dataclass(frozen=True)
class DiTConfig:
    dim: int = 128
    layers: int = 2
    heads: int = 4
    mlp_ratio: float = 2.0
    patch_size: int = 2
    freq_dim: int = 256
    rope_theta: float = 10000.0
    reference_time: float = -1.0
    """RoPE time index of the reference tokens (chunk frames use 0..T-1)."""
    bridge_sigma: float = 0.1
    """Std of I-chunk frames around their anchors' blend: 0.03 in the clips, set higher because generated frames
    change about 3x more per frame than the clips do."""


@dataclass(frozen=True)
class SRConfig:
    dim: int = 64
    layers: int = 2
    heads: int = 2
    mlp_ratio: float = 2.0
    patch_size: int = 2
    t_start: float = 0.3
    """Noise level of the one-step refinement (0 = trust upsampled base fully)."""


@dataclass(frozen=True)
class ReferenceEncoderConfig:
    layers: int = 1
    global_tokens: int = 4


@dataclass(frozen=True)
class DemoConfig:
    fps: int = 25
    sample_rate: int = 16000
    image_size: int = 256
    base_size: int = 128
    vae: VAEConfig = field(default_factory=VAEConfig)
    audio: AudioEncoderConfig = field(default_factory=AudioEncoderConfig)
    text: TextEncoderConfig = field(default_factory=TextEncoderConfig)
    dit: DiTConfig = field(default_factory=DiTConfig)
    sr: SRConfig = field(default_factory=SRConfig)
    reference: ReferenceEncoderConfig = field(default_factory=ReferenceEncoderConfig)

    def __post_init__(self) -> None:
        _validate(self)

    @property
    def samples_per_frame(self) -> int:
        return self.sample_rate // self.fps

    @property
    def base_latent_size(self) -> int:
        return self.base_size // VAE_SPATIAL_FACTOR

    @property
    def latent_size(self) -> int:
        return self.image_size // VAE_SPATIAL_FACTOR

    @classmethod
    def tiny(cls) -> DemoConfig:
        """A very small config (64x64 video) for fast tests."""
        return cls(
            image_size=64,
            base_size=32,
            vae=VAEConfig(latent_channels=4, encoder_channels=16, decoder_channels=16, decoder_up_channels=8, groups=4),
            audio=AudioEncoderConfig(n_mels=16, conv_channels=16, dim=32, layers=1, heads=2),
            text=TextEncoderConfig(dim=32, layers=1, heads=2, max_length=16),
            dit=DiTConfig(dim=32, layers=1, heads=2, freq_dim=32),
            sr=SRConfig(dim=32, layers=1, heads=2),
            reference=ReferenceEncoderConfig(layers=1, global_tokens=2),
        )

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> DemoConfig:
        """Inverse of `to_dict`; missing keys take defaults, unknown keys are an error."""
        nested = {f.name: f.default_factory for f in dataclasses.fields(cls) if inspect.isclass(f.default_factory)}  # the sub-config classes
        kwargs: dict[str, Any] = {}
        for key, value in _known(cls, data).items():
            kwargs[key] = nested[key](**_known(nested[key], value)) if key in nested else value
        return cls(**kwargs)


def _known(cls: type, data: Any) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise TypeError(f"{cls.__name__}: expected a mapping, got {type(data).__name__}")
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - names)
    if unknown:
        raise ValueError(f"{cls.__name__}: unknown config keys {unknown}")
    for f in dataclasses.fields(cls):
        default = f.default
        if f.name in data and isinstance(default, (int, float)) and not _number_like(data[f.name], type(default)):
            raise ValueError(f"{cls.__name__}.{f.name}: expected {type(default).__name__}, got {data[f.name]!r}")
    return dict(data)


def _number_like(value: Any, kind: type) -> bool:
    """An int where the default is an int; an int or float where it is a float (never a bool or a string)."""
    if isinstance(value, bool):
        return False
    return isinstance(value, int) if kind is int else isinstance(value, (int, float))


def _check(ok: bool, message: str) -> None:
    if not ok:
        raise ValueError(message)


def _check_heads(name: str, dim: int, heads: int, *, rope: bool) -> None:
    _check(dim > 0 and heads > 0 and dim % heads == 0, f"{name}: dim ({dim}) must be a positive multiple of heads ({heads})")
    if rope:
        head_dim = dim // heads
        _check(head_dim % 2 == 0 and head_dim >= 6, f"{name}: head dim ({head_dim}) must be even and >= 6 for 3D RoPE")


def _check_bounds(cfg: DemoConfig) -> None:
    """Every count at most its bound, every float finite and at most MAX_RATIO in size (mlp_ratio, rope_theta excepted)."""
    for part in (cfg, *(getattr(cfg, f.name) for f in dataclasses.fields(cfg) if dataclasses.is_dataclass(getattr(cfg, f.name)))):
        for f in dataclasses.fields(part):
            value = getattr(part, f.name)
            name = f"{type(part).__name__}.{f.name}"
            if isinstance(value, int):
                bound = MAX_LAYERS if f.name.endswith("layers") else MAX_SAMPLE_RATE if f.name == "sample_rate" else MAX_SIZE
                _check(value <= bound, f"{name} ({value}) must be at most {bound}")
            elif isinstance(value, float):
                limit = 1e9 if f.name == "rope_theta" else MAX_RATIO
                _check(math.isfinite(value) and abs(value) <= limit, f"{name} ({value}) must be a finite number of size at most {limit:g}")


def _validate(cfg: DemoConfig) -> None:
    _check_bounds(cfg)
    _check(cfg.dit.patch_size >= 1 and cfg.sr.patch_size >= 1, "dit.patch_size and sr.patch_size must be >= 1")
    _check(cfg.vae.groups >= 1, f"vae.groups ({cfg.vae.groups}) must be >= 1")
    _check(cfg.fps > 0 and cfg.sample_rate > 0, "fps and sample_rate must be positive")
    _check(cfg.sample_rate % cfg.fps == 0, f"sample_rate ({cfg.sample_rate}) must be a multiple of fps ({cfg.fps})")
    _check(cfg.image_size == SR_FACTOR * cfg.base_size, f"image_size ({cfg.image_size}) must be exactly {SR_FACTOR} x base_size ({cfg.base_size})")
    _check(
        cfg.base_size % (VAE_SPATIAL_FACTOR * cfg.dit.patch_size) == 0,
        f"base_size ({cfg.base_size}) must be divisible by VAE factor {VAE_SPATIAL_FACTOR} x DiT patch size {cfg.dit.patch_size}",
    )
    _check(
        cfg.image_size % (VAE_SPATIAL_FACTOR * cfg.sr.patch_size) == 0,
        f"image_size ({cfg.image_size}) must be divisible by VAE factor {VAE_SPATIAL_FACTOR} x SR patch size {cfg.sr.patch_size}",
    )

    a = cfg.audio
    _check(
        a.mel_per_frame > 0 and cfg.samples_per_frame % a.mel_per_frame == 0,
        f"samples per frame ({cfg.samples_per_frame}) must be a multiple of audio.mel_per_frame ({a.mel_per_frame})",
    )
    _check(0 < a.win_length <= a.n_fft, f"audio.win_length ({a.win_length}) must be in (0, n_fft={a.n_fft}]")
    _check(
        a.tokens_per_frame > 0 and a.mel_per_frame % a.tokens_per_frame == 0,
        f"audio.mel_per_frame ({a.mel_per_frame}) must be a multiple of audio.tokens_per_frame ({a.tokens_per_frame})",
    )
    _check(a.conv_layers >= 1 and a.context_frames >= 0 and a.layers >= 0, "audio: conv_layers must be >= 1, context_frames and layers >= 0")
    _check_heads("audio", a.dim, a.heads, rope=False)
    _check_heads("text", cfg.text.dim, cfg.text.heads, rope=False)
    _check(cfg.text.max_length >= 1, "text.max_length must be >= 1")
    _check_heads("dit", cfg.dit.dim, cfg.dit.heads, rope=True)
    _check_heads("sr", cfg.sr.dim, cfg.sr.heads, rope=True)
    _check(cfg.dit.layers >= 1 and cfg.sr.layers >= 1, "dit.layers and sr.layers must be >= 1")
    _check(0.0 < cfg.sr.t_start < 1.0, f"sr.t_start ({cfg.sr.t_start}) must be in (0, 1)")
    _check(cfg.reference.global_tokens >= 0 and cfg.reference.layers >= 0, "reference.global_tokens and reference.layers must be >= 0")
    v = cfg.vae
    for name in ("encoder_channels", "decoder_channels"):
        _check(getattr(v, name) % v.groups == 0, f"vae.{name} ({getattr(v, name)}) must be a multiple of vae.groups ({v.groups})")
    _check(min(v.latent_channels, v.decoder_up_channels) >= 1, "vae.latent_channels and vae.decoder_up_channels must be >= 1")
