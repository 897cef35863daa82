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
import sys

import torch

import avatarstream
from avatarstream.errors import InputError

SPIN_WARNING = (
    "warning: torch was imported before avatarstream, so OpenMP's idle threads spin (OMP_WAIT_POLICY=PASSIVE came too late) "
    "and a render slows down several times next to other jobs; running on 1 CPU thread instead. To use every core: import "
    "avatarstream before torch, or set OMP_WAIT_POLICY=PASSIVE in the environment, or pass threads"
)
_state = {"chosen": False, "warned": False}  # threads chosen by the user (set_threads with a number); the warning given


def set_threads(threads: int | None) -> None:
    """``--threads``: torch's intra-op threads (None: one per core, or 1 where idle threads would spin: ``check_spinning``)."""
    if threads is not None and threads < 1:
        raise InputError(f"--threads must be at least 1, got {threads}")
    if threads is None:
        check_spinning()
        return
    _state["chosen"] = True
    torch.set_num_threads(threads)


def check_spinning() -> None:
    """At the start of a run: where OpenMP's idle threads spin (torch was imported first) and the user chose no thread
    count, run on 1 thread, which nothing can spin on (as fast as two for small models, and not slowed by other jobs),
    and say once how to use every core."""
    if not avatarstream.omp_policy_came_too_late or _state["chosen"]:
        return
    torch.set_num_threads(1)
    if not _state["warned"]:
        print(SPIN_WARNING, file=sys.stderr)
        _state["warned"] = True


def cpu_report() -> dict[str, object]:
    """What the report says about CPU threading (the figures depend on it)."""
    return {"threads": torch.get_num_threads(), "cores": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
            "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY"), "gomp_spincount": os.environ.get("GOMP_SPINCOUNT"),
            "omp_policy_came_too_late": avatarstream.omp_policy_came_too_late}  # fmt: skip
