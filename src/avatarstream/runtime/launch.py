"""Multi-process runs: one process per GPU under torchrun; rank 0 publishes.

``relaunch(nproc, argv)`` re-executes the same command under
``python -m torch.distributed.run --standalone --nproc-per-node N`` (the
documented equivalent is ``torchrun --standalone --nproc-per-node N -m --
avatarstream.cli.main render ...``). In each worker ``init_rank`` picks the
rank's GPU, binds the process to that GPU's NUMA node and joins the process
group (NCCL on GPUs, gloo on a CPU build) and the groups of its ``--parallel``
layout. Rank 0 runs the command (render, serve) and writes every output; the
other ranks follow its runs (``Pipeline.follow``).

The launcher runs in this process (not ``exec``): when a rank fails, every
rank stops with the failing rank's message (printed once, by rank 0), and the
launcher's own report of failed workers is not printed on top of it.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta

import torch
import torch.distributed as dist

from avatarstream.errors import InputError
from avatarstream.runtime.parallel import groups as parallel_groups
from avatarstream.runtime.parallel.control import ControlChannel
from avatarstream.runtime.parallel.groups import ParallelGroups
from avatarstream.runtime.parallel.layout import ParallelLayout, parse_parallel
from avatarstream.runtime.placement import Binding, bind_to_gpu

CLI_MODULE = "avatarstream.cli.main"
#: Seconds one collective may take before it fails (torch's default when unset; NCCL's watchdog follows it).
COLLECTIVE_TIMEOUT_ENV = "AVATARSTREAM_COLLECTIVE_TIMEOUT_S"


@dataclass(frozen=True)
class RankInfo:
    """This process's place in the run."""

    rank: int = 0
    local_rank: int = 0
    world_size: int = 1
    binding: Binding | None = None
    layout: ParallelLayout = ParallelLayout()
    groups: ParallelGroups = field(default_factory=parallel_groups.one_process)  # the process groups of ``layout``: pass them to ``build_pipeline``

    @property
    def publishes(self) -> bool:
        """Only rank 0 writes files, reports and live outputs."""
        return self.rank == 0

    @property
    def distributed(self) -> bool:
        return self.world_size > 1


def under_torchrun(env: Mapping[str, str] = os.environ) -> bool:
    return "LOCAL_RANK" in env and "WORLD_SIZE" in env


def torchrun_command(nproc: int, argv: Sequence[str], module: str = CLI_MODULE) -> list[str]:
    """The command line that runs ``python -m module *argv`` in ``nproc`` processes on this node.

    ``--`` ends torchrun's own options: without it torchrun's parser would take
    ``--nproc`` of ``argv`` for an abbreviation of its ``--nproc-per-node``.
    """
    return [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={nproc}", "-m", "--", module, *argv]


def relaunch(nproc: int, argv: Sequence[str], parallel: str | None = None) -> None:
    """Run the same command in ``nproc`` torchrun workers and exit with rank 0's status when ``nproc > 1``; otherwise return.

    Inside a torchrun worker it returns too, so the same command line works for both.
    ``parallel`` (``--parallel``) is checked against ``nproc`` here, before any worker starts.
    """
    if nproc < 1:
        raise InputError(f"--nproc must be 1 or more, got {nproc}")
    if nproc == 1 or under_torchrun():
        parse_parallel(parallel, int(os.environ.get("WORLD_SIZE", nproc)))
        return
    parse_parallel(parallel, nproc)
    if torch.cuda.is_available() and nproc > torch.cuda.device_count():
        raise InputError(f"--nproc {nproc} asks for more processes than the {torch.cuda.device_count()} visible GPUs")
    sys.stdout.flush()
    sys.stderr.flush()
    sys.exit(_launch(torchrun_command(nproc, argv)[3:]))


def _launch(torchrun_args: list[str]) -> int:
    """torchrun in this process; rank 0's exit status (the workers' messages are their own, the launcher's report is not shown)."""
    from torch.distributed.elastic.multiprocessing.api import SignalException
    from torch.distributed.elastic.multiprocessing.errors import ChildFailedError
    from torch.distributed.run import parse_args, run

    logging.getLogger("torch.distributed.elastic").setLevel(logging.CRITICAL)
    try:
        run(parse_args(torchrun_args))  # type: ignore[no-untyped-call]
    except ChildFailedError as failed:
        codes = {rank: failure.exitcode for rank, failure in failed.failures.items()}
        return codes.get(0) or next(iter(codes.values())) or 1
    except SignalException as stopped:  # Ctrl-C or SIGTERM: the launcher has passed it on to the workers and waited for them
        return 128 + int(stopped.sigval)
    return 0


def init_rank(device: torch.device, parallel: str | None = None, collective_timeout_s: float | None = None) -> tuple[RankInfo, torch.device]:
    """Set this process up for its rank and its ``--parallel`` layout; returns the rank and the device it must use.

    Without torchrun (or with one process) nothing changes except that a GPU
    process is still bound to its GPU's NUMA node. ``collective_timeout_s``
    (default: ``$AVATARSTREAM_COLLECTIVE_TIMEOUT_S``, else torch's) bounds one
    collective; ranks waiting for a session or its audio are never inside one.
    """
    env = os.environ
    world = int(env.get("WORLD_SIZE", "1")) if under_torchrun() else 1
    local_rank = int(env.get("LOCAL_RANK", "0")) if world > 1 else 0
    binding = None
    if device.type == "cuda":
        if world > 1:
            if local_rank >= torch.cuda.device_count():
                raise InputError(f"rank {local_rank} has no GPU: {torch.cuda.device_count()} visible for {world} processes")
            device = torch.device("cuda", local_rank)
        index = device.index if device.index is not None else torch.cuda.current_device()
        torch.cuda.set_device(index)
        binding = bind_to_gpu(index)
    if world == 1:
        parse_parallel(parallel, 1)  # a layout of one process is no layout; more is an error that says so
        return RankInfo(binding=binding), device
    layout = parse_parallel(parallel, world)
    if collective_timeout_s is None and env.get(COLLECTIVE_TIMEOUT_ENV):
        collective_timeout_s = float(env[COLLECTIVE_TIMEOUT_ENV])
    timeout = None if collective_timeout_s is None else timedelta(seconds=collective_timeout_s)
    dist.init_process_group("nccl" if device.type == "cuda" else "gloo", device_id=device if device.type == "cuda" else None, timeout=timeout)
    rank = dist.get_rank()
    readers = layout.generating_ranks - 1 if layout.splits else world - 1  # the decode rank reads no audio
    groups = parallel_groups.join(layout, ControlChannel.from_environment(rank, world, readers))
    return RankInfo(rank, local_rank, world, binding, layout, groups), device


def finish(info: RankInfo) -> None:
    """End this rank's part: rank 0 releases the followers; everyone leaves the group."""
    if not info.distributed:
        return
    control = info.groups.control
    if control is not None and info.publishes and dist.is_initialized():
        control.shutdown()
    if dist.is_initialized():
        dist.destroy_process_group()
