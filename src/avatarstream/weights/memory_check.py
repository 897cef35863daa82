"""Refuse a model the machine cannot hold, from its config, before anything is allocated.

Weights are read into host memory before they reach a device (whatever the residency policy), so a model whose
weights and buffers exceed the host's physical memory cannot load: it would only grow until the kernel kills the
process. The size is counted on the meta device, where building costs no memory; buffers that a library computes
on the CPU even under :func:`~avatarstream.weights.meta_load.empty_weights` (Wan's rotary table) are counted as well.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import psutil
import torch

from avatarstream.errors import InputError

GIB = 2**30


def meta_bytes(factory: Callable[[], torch.nn.Module], bytes_per_param: int) -> int:
    """Bytes of ``factory()``'s parameters at ``bytes_per_param`` plus its buffers at their own dtype, built on meta."""
    with torch.device("meta"):
        network = factory()
    params = sum(p.numel() for p in network.parameters()) * bytes_per_param
    return params + sum(b.numel() * b.element_size() for b in network.buffers())


def host_memory() -> int:
    """Physical memory of this machine, in bytes."""
    return int(psutil.virtual_memory().total)


def require_fits(nbytes: int, what: str, source: Path) -> None:
    """One InputError when ``what`` (described by ``source``) needs more than the host's physical memory."""
    total = host_memory()
    if nbytes > total:
        raise InputError(
            f"{source} describes {what} of {nbytes / GIB:,.1f} GiB, more than this machine's {total / GIB:.1f} GiB of memory, "
            "so it cannot be loaded; the config is damaged or belongs to another model (compare it with the download's)"
        )
