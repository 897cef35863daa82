"""Sizes of the Wan 2.1 VAE and the text length of Wan's text encoder, the same in every Wan-based model.

Kept free of torch so that a family's options and presets can read the strides without loading a network.
"""

from __future__ import annotations

from dataclasses import dataclass

#: Pixel frames per latent frame after the first (the VAE's temporal stride).
VAE_TEMPORAL_STRIDE = 4
#: Pixel-to-latent spatial stride of the Wan 2.1 VAE.
VAE_SPATIAL_STRIDE = 8
#: Text tokens the model attends to (prompts are zero-padded to it); diffusers hard-codes the same 512.
TEXT_LEN = 512


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
