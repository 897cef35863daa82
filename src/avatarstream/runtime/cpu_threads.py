"""CPU threads: how many torch uses, chosen by the user or following the machine (``cpu_contention``).

Without a thread count (``--threads``, ``threads=``) torch uses every core
while the machine is quiet and one thread while another program competes for
the cores, re-chosen at chunk boundaries. OpenMP keeps its own wait policy, so
the order in which a program imports torch and avatarstream does not matter.
"""

from __future__ import annotations

import functools
import os
import threading

import torch

from avatarstream.errors import InputError
from avatarstream.runtime.cpu_contention import ThreadGovernor

_DEFAULT_THREADS = torch.get_num_threads()  # torch's own choice, one per core, before anything sets it
_follow = {"machine": True}  # False while the user's thread count (set_threads) stands
_steered = threading.local()  # per thread: the count the governor last gave it (torch keeps the count per thread)
_last_given = {"threads": _DEFAULT_THREADS}  # what a new thread starts with, unless someone else set torch's count since


def set_threads(threads: int | None, *, follow_machine: bool = True) -> None:
    """``--threads``: torch's intra-op threads. None: torch's count as it is (one per core unless the program set another),
    following the machine (``fit_threads``) where it is torch's default, unless ``follow_machine`` is off (runs that are
    compared with each other need one count)."""
    if threads is not None and threads < 1:
        raise InputError(f"--threads must be at least 1, got {threads}")
    _follow["machine"] = threads is None and follow_machine
    if threads is not None:
        torch.set_num_threads(threads)
    elif _follow["machine"]:
        _governor()  # its first look at the machine: loading the model is the window of its first choice


def fit_threads() -> None:
    """At a chunk boundary, on each thread that runs operators: the thread count for the machine as it is now. A thread
    whose count someone else set (``torch.set_num_threads`` in a program that streams a pipeline itself) to other than
    torch's default keeps it."""
    governor = _governor()
    if governor is None or torch.get_num_threads() != getattr(_steered, "threads", _last_given["threads"]):
        return
    governor.poll()
    if governor.threads != torch.get_num_threads():
        torch.set_num_threads(governor.threads)
    _steered.threads = _last_given["threads"] = governor.threads


def restore_threads() -> None:
    """At the end of a run, on its main thread: a count the governor chose does not outlive the run (what torch had before)."""
    if getattr(_steered, "threads", None) == torch.get_num_threads() != _DEFAULT_THREADS:
        torch.set_num_threads(_DEFAULT_THREADS)
    _steered.threads = _last_given["threads"] = _DEFAULT_THREADS


def _governor() -> ThreadGovernor | None:
    """The governor while the machine is followed; None where the user chose a count, there is one core, or no counters."""
    return _machine_governor() if _follow["machine"] and _DEFAULT_THREADS > 1 else None


@functools.cache
def _machine_governor() -> ThreadGovernor | None:
    """The process's one governor, made at the first run that follows the machine (None where /proc cannot be read)."""
    governor = ThreadGovernor(_DEFAULT_THREADS, _cores())
    return governor if governor.readable else None


def _cores() -> frozenset[int]:
    """The CPUs this process may run on."""
    return frozenset(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else frozenset(range(os.cpu_count() or 1))


def cpu_report() -> dict[str, object]:
    """What the report says about CPU threading (the figures depend on it)."""
    governor = _governor()
    return {"threads": torch.get_num_threads(), "cores": len(_cores()),
            "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY"), "gomp_spincount": os.environ.get("GOMP_SPINCOUNT"),
            "follows_machine": governor.report() if governor is not None else None}  # fmt: skip
