"""Refuse a model the machine cannot hold, from its config, before anything is allocated.

A model whose weights and buffers exceed everything the machine has (its physical memory and every GPU's together)
cannot load, whatever the residency policy: it would only grow until the kernel kills the process. The bound is that
generous on purpose: it refuses a config that lies (a billion-wide layer, a million layers), never a model that a
residency policy could place. The size is counted on the meta device, where building costs no memory; buffers that a library computes
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


def machine_memory() -> int:
    """Physical memory of this machine plus that of every GPU it has, in bytes."""
    gpus = sum(torch.cuda.get_device_properties(i).total_memory for i in range(torch.cuda.device_count())) if torch.cuda.is_available() else 0
    return int(psutil.virtual_memory().total) + gpus


def require_fits(nbytes: int, what: str, source: Path) -> None:
    """One InputError when ``what`` (described by ``source``) needs more than the machine's memory, GPUs included."""
    total = machine_memory()
    if nbytes > total:
        raise InputError(
            f"{source} describes {what} of {nbytes / GIB:,.1f} GiB, more than this machine's {total / GIB:.1f} GiB of memory (GPUs included), "
            "so it cannot be loaded; the config is damaged or belongs to another model (compare it with the download's)"
        )
