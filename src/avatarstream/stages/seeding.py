"""Noise that depends only on (seed, what it is for), never on execution order.

Every draw has its own generator keyed by what it is for, so batch,
streaming and overlapped execution produce identical frames, and noise is
drawn on the CPU so a CUDA run matches a CPU run.
"""

from __future__ import annotations

import hashlib

import torch

from avatarstream.runtime.devices import upload


def derived_seed(seed: int, *parts: object) -> int:
    digest = hashlib.blake2b(repr((seed, *parts)).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") & 0x7FFF_FFFF_FFFF_FFFF


def seeded_noise(shape: tuple[int, ...], device: torch.device, seed: int, *parts: object) -> torch.Tensor:
    generator = torch.Generator(device="cpu").manual_seed(derived_seed(seed, *parts))
    return upload(torch.randn(shape, generator=generator), device)
