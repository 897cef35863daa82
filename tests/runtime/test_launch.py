"""``--nproc N`` re-executes the command under torchrun; a worker finds its rank, a single process changes nothing."""

from __future__ import annotations

import sys

import pytest
import torch

from avatarstream.errors import InputError
from avatarstream.runtime import launch
from avatarstream.runtime.launch import RankInfo, init_rank, relaunch, torchrun_command, under_torchrun


def test_torchrun_command() -> None:
    assert torchrun_command(4, ["render", "--out", "a.mp4"]) == [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc-per-node=4",
        "-m",
        "--",
        "avatarstream.cli.main",
        "render",
        "--out",
        "a.mp4",
    ]


def test_relaunch_execs_torchrun_only_when_needed(monkeypatch: pytest.MonkeyPatch) -> None:
    execs: list[list[str]] = []
    monkeypatch.setattr(launch.os, "execv", lambda path, args: execs.append(list(args)))
    for name in ("LOCAL_RANK", "WORLD_SIZE"):
        monkeypatch.delenv(name, raising=False)
    relaunch(1, ["render"])
    assert execs == []
    relaunch(2, ["render", "--nproc", "2"])
    assert execs == [torchrun_command(2, ["render", "--nproc", "2"])]
    monkeypatch.setenv("LOCAL_RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "2")
    assert under_torchrun()
    relaunch(2, ["render", "--nproc", "2"])  # already a worker: run the command itself
    assert len(execs) == 1
    with pytest.raises(InputError, match="--nproc must be 1 or more, got 0"):
        relaunch(0, ["render"])


def test_single_process_changes_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("LOCAL_RANK", "WORLD_SIZE"):
        monkeypatch.delenv(name, raising=False)
    info, device = init_rank(torch.device("cpu"))
    assert info == RankInfo() and info.publishes and not info.distributed
    assert device == torch.device("cpu")
    launch.finish(info)
    assert not torch.distributed.is_initialized()


def test_only_rank_zero_publishes() -> None:
    assert RankInfo(rank=0, world_size=2).publishes
    assert not RankInfo(rank=1, local_rank=1, world_size=2).publishes
