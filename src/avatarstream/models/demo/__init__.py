"""The `demo` model family: small pure-PyTorch models that run in real time on a CPU."""

from .a2v_dit import A2VDiT
from .audio_encoder import AudioEncoder
from .config import (
    AudioEncoderConfig,
    DemoConfig,
    DiTConfig,
    ReferenceEncoderConfig,
    SRConfig,
    TextEncoderConfig,
    VAEConfig,
)
from .reference_encoder import ReferenceEncoder
from .rope import Rope3D, apply_rope, grid_positions
from .sampler import FlowMatchEuler
from .sr_dit import SRDiT
from .text_encoder import TextEncoder
from .vae import CausalVAE, VAEDecodeCache

__all__ = [
    "A2VDiT",
    "AudioEncoder",
    "AudioEncoderConfig",
    "CausalVAE",
    "DemoConfig",
    "DiTConfig",
    "FlowMatchEuler",
    "ReferenceEncoder",
    "ReferenceEncoderConfig",
    "Rope3D",
    "SRConfig",
    "SRDiT",
    "TextEncoder",
    "TextEncoderConfig",
    "VAEConfig",
    "VAEDecodeCache",
    "apply_rope",
    "grid_positions",
]
