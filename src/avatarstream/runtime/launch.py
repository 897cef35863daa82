"""Multi-process runs: one process per GPU under torchrun; rank 0 publishes.

``relaunch(nproc, argv)`` re-executes the same command under
``python -m torch.distributed.run --standalone --nproc-per-node N`` (the
documented equivalent is ``torchrun --standalone --nproc-per-node N -m --
avatarstream.cli.main render ...``). In each worker ``init_rank`` picks the
rank's GPU, binds the process to that GPU's NUMA node and joins the process
group (NCCL on GPUs, gloo on a CPU build). Every rank runs the whole pipeline
(sharded modules need every rank's forwards); only rank 0 writes outputs.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import torch
import torch.distributed as dist

from avatarstream.errors import InputError
from avatarstream.runtime.placement import Binding, bind_to_gpu

CLI_MODULE = "avatarstream.cli.main"


@dataclass(frozen=True)
class RankInfo:
    """This process's place in the run."""

    rank: int = 0
    local_rank: int = 0
    world_size: int = 1
    binding: Binding | None = None

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


def relaunch(nproc: int, argv: Sequence[str]) -> None:
    """Replace this process with torchrun running the same command when ``nproc > 1``; otherwise return.

    Inside a torchrun worker it returns too, so the same command line works for both.
    """
    if nproc < 1:
        raise InputError(f"--nproc must be 1 or more, got {nproc}")
    if nproc == 1 or under_torchrun():
        return
    if torch.cuda.is_available() and nproc > torch.cuda.device_count():
        raise InputError(f"--nproc {nproc} asks for more processes than the {torch.cuda.device_count()} visible GPUs")
    command = torchrun_command(nproc, argv)
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(command[0], command)


def init_rank(device: torch.device) -> tuple[RankInfo, torch.device]:
    """Set this process up for its rank; returns the rank and the device it must use.

    Without torchrun (or with one process) nothing changes except that a GPU
    process is still bound to its GPU's NUMA node.
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
        return RankInfo(binding=binding), device
    dist.init_process_group("nccl" if device.type == "cuda" else "gloo", device_id=device if device.type == "cuda" else None)
    return RankInfo(dist.get_rank(), local_rank, world, binding), device


def finish(info: RankInfo) -> None:
    """Leave the process group (end of a distributed run)."""
    if info.distributed and dist.is_initialized():
        dist.destroy_process_group()
