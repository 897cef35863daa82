"""CPU threads: how many torch uses, and how they wait.

The package sets ``OMP_WAIT_POLICY=PASSIVE`` (unless the user set it) before
torch loads OpenMP, in ``avatarstream/__init__.py``: with OpenMP's default,
idle worker threads spin for milliseconds after every parallel operator, and
a model of many small operators then spends the cores spinning. Next to one
competing job on 2 cores a small model's render slowed down from 1.24x to 0.16x real
time that way; passive workers sleep at once and the same render keeps
0.66x of its 1.05x (docs/runtime.md, ``avatarstream bench --scenario contention``).
"""

from __future__ import annotations

import os

import torch

from avatarstream.errors import InputError


def set_threads(threads: int | None) -> None:
    """``--threads``: torch's intra-op threads (None: torch's default, one per core)."""
    if threads is None:
        return
    if threads < 1:
        raise InputError(f"--threads must be at least 1, got {threads}")
    torch.set_num_threads(threads)


def cpu_report() -> dict[str, object]:
    """What the report says about CPU threading (the figures depend on it)."""
    return {"threads": torch.get_num_threads(), "cores": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
            "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY"), "gomp_spincount": os.environ.get("GOMP_SPINCOUNT")}  # fmt: skip
