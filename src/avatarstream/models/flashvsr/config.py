"""Sizes of FlashVSR's networks: the Wan2.1-T2V DiT, the LQ projection and the TCDecoder, and the streaming constants.

The real download states no sizes (the reference recognises the 1.3B DiT by a
hash of its key names and shapes); a folder's ``config.json`` gives the DiT's
when present, otherwise they are read from the tensor shapes
(``*.from_shapes``), so one code path runs a shrunk test checkpoint and the
real one. Kept free of torch so that options and layouts can read it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

Shapes = Mapping[str, tuple[int, ...]]

#: Tokens per attention window: 2 latent frames x 8 x 8 tokens (the block-sparse kernel's 128-token block).
WINDOW = (2, 8, 8)
WINDOW_TOKENS = math.prod(WINDOW)
#: Wan's attention heads are 128 wide in every published size; the head count of a DiT without config.json follows from it.
HEAD_DIM = 128
#: Latent frames of the first call, and of every later one.
FIRST_CALL_LATENTS = 6
CALL_LATENTS = 2
#: Low-resolution frames per latent frame (the VAE's and the TCDecoder's temporal stride) and the x4 upscale factor.
FRAMES_PER_LATENT = 4
SCALE = 4
#: Pixels per DiT token (VAE x8, patch x2) and the size a frame is cropped to a multiple of (a window of 8 tokens).
PIXELS_PER_TOKEN = 16
SIZE_MULTIPLE = PIXELS_PER_TOKEN * WINDOW[1]
#: The example script's sparsity: topk_ratio = sparse_ratio * REFERENCE_AREA / (H * W).
REFERENCE_AREA = 768 * 1280
#: The one diffusion step's timestep.
TIMESTEP = 1000.0


def _shape(shapes: Shapes, key: str, rank: int) -> tuple[int, ...]:
    shape = shapes.get(key)
    if shape is None or len(shape) != rank:
        raise KeyError(key)
    return shape


@dataclass(frozen=True)
class DiTConfig:
    """The Wan2.1-T2V DiT (real: the 1.3B, 1536 wide, 30 layers, 12 heads)."""

    dim: int = 1536
    num_heads: int = 12
    num_layers: int = 30
    ffn_dim: int = 8960
    text_dim: int = 4096
    freq_dim: int = 256
    in_dim: int = 16
    out_dim: int = 16
    eps: float = 1e-6
    patch_size: tuple[int, int, int] = (1, 2, 2)

    def __post_init__(self) -> None:
        if self.dim % self.num_heads or (self.dim // self.num_heads) % 2:
            raise ValueError(f"dim {self.dim} must split into {self.num_heads} heads of an even size")
        if self.patch_size != (1, 2, 2):
            raise ValueError(f"FlashVSR's windows assume a (1, 2, 2) patch, got {self.patch_size}")
        if self.freq_dim % 2:
            raise ValueError(f"freq_dim must be even, got {self.freq_dim}")

    @property
    def head_dim(self) -> int:
        return self.dim // self.num_heads

    @classmethod
    def from_shapes(cls, shapes: Shapes) -> DiTConfig:
        """The sizes of a DiT state dict in the original Wan key names (heads: 128 wide, as in every Wan DiT)."""
        dim, in_dim, *patch = _shape(shapes, "patch_embedding.weight", 5)
        layers = 1 + max((int(k.split(".")[1]) for k in shapes if k.startswith("blocks.") and k.split(".")[1].isdigit()), default=-1)
        head = _shape(shapes, "head.head.weight", 2)[0]
        ffn_dim = _shape(shapes, "blocks.0.ffn.0.weight", 2)[0]
        text_dim = _shape(shapes, "text_embedding.0.weight", 2)[1]
        freq_dim = _shape(shapes, "time_embedding.0.weight", 2)[1]
        if dim % HEAD_DIM:
            raise ValueError(f"a DiT {dim} wide does not split into heads of {HEAD_DIM}; give a config.json with num_heads")
        return cls(dim, dim // HEAD_DIM, layers, ffn_dim, text_dim, freq_dim, in_dim, head // math.prod(patch), patch_size=(patch[0], patch[1], patch[2]))


@dataclass(frozen=True)
class LQProjConfig:
    """The LQ projection (``Buffer_LQ4x_Proj``): 16x16 pixel-unshuffle, two causal convs, one linear layer per fed DiT block."""

    in_dim: int = 3
    hidden_dim1: int = 2048
    hidden_dim2: int = 3072
    out_dim: int = 1536
    layer_num: int = 1
    unshuffle: int = 16

    @classmethod
    def from_shapes(cls, shapes: Shapes) -> LQProjConfig:
        hidden1, unshuffled, *_ = _shape(shapes, "conv1.weight", 5)
        hidden2 = _shape(shapes, "conv2.weight", 5)[0]
        out_dim = _shape(shapes, "linear_layers.0.weight", 2)[0]
        layers = sum(1 for k in shapes if k.startswith("linear_layers.") and k.endswith(".weight"))
        unshuffle = 16
        if unshuffled % (unshuffle * unshuffle):
            raise ValueError(f"conv1 takes {unshuffled} channels, not a multiple of {unshuffle}x{unshuffle} unshuffled pixels")
        return cls(unshuffled // (unshuffle * unshuffle), hidden1, hidden2, out_dim, layers, unshuffle)


@dataclass(frozen=True)
class TCDecoderConfig:
    """The TCDecoder (a TAEHV decoder whose input is the LQ frames pixel-unshuffled (4, 8, 8) in front of the latents)."""

    channels: tuple[int, int, int, int] = (512, 256, 128, 128)
    latent_channels: int = 16
    cond_shuffle: tuple[int, int, int] = (4, 8, 8)
    image_channels: int = 3

    @property
    def input_channels(self) -> int:
        return self.image_channels * math.prod(self.cond_shuffle) + self.latent_channels

    @classmethod
    def from_shapes(cls, shapes: Shapes, *, latent_channels: int = 16) -> TCDecoderConfig:
        """Widths from the first conv of each stage (``decoder.1``, ``.10``, ``.16``, ``.22``)."""
        first, inputs, *_ = _shape(shapes, "decoder.1.weight", 4)
        widths = (first, *(_shape(shapes, f"decoder.{i}.weight", 4)[0] for i in (10, 16, 22)))
        config = cls(channels=(widths[0], widths[1], widths[2], widths[3]), latent_channels=latent_channels)
        if inputs != config.input_channels:
            raise ValueError(f"decoder.1 takes {inputs} channels, expected {config.input_channels} (768 unshuffled LQ + {latent_channels} latent)")
        return config
