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


def test_relaunch_runs_torchrun_only_when_needed(monkeypatch: pytest.MonkeyPatch) -> None:
    launches: list[list[str]] = []
    monkeypatch.setattr(launch, "_launch", lambda args: launches.append(list(args)) or 3)
    for name in ("LOCAL_RANK", "WORLD_SIZE"):
        monkeypatch.delenv(name, raising=False)
    relaunch(1, ["render"])
    assert launches == []
    with pytest.raises(SystemExit) as exited:
        relaunch(2, ["render", "--nproc", "2"])
    assert exited.value.code == 3  # rank 0's status is the command's
    assert launches == [torchrun_command(2, ["render", "--nproc", "2"])[3:]]  # torchrun's own arguments, run in this process
    monkeypatch.setenv("LOCAL_RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "2")
    assert under_torchrun()
    relaunch(2, ["render", "--nproc", "2"])  # already a worker: run the command itself
    assert len(launches) == 1
    with pytest.raises(InputError, match="--nproc must be 1 or more, got 0"):
        relaunch(0, ["render"])


@pytest.mark.parametrize(
    ("nproc", "parallel", "message"),
    [
        (1, "sp=2", r"--parallel sp=2 needs 2 processes \(sp 2 x cfg 1\), but --nproc is 1; make them agree \(e.g. --nproc 2\)"),
        (4, "sp=2,cfg=2,decode", r"needs 5 processes \(sp 2 x cfg 2 \+ 1 decode rank\), but --nproc is 4"),
        (2, "tp=2", r"unknown part 'tp=2'; use sp=S, cfg=C, steps=N and decode"),
        (4, "steps=4,decode", r"needs 5 processes \(steps 4 \+ 1 decode rank\), but --nproc is 4"),
        (4, "steps=2,cfg=2", r"steps=N does not combine with cfg; use steps=N\[,sp=S\]\[,decode\]"),
        (6, "steps=2,sp=2,decode", r"needs 5 processes \(steps 2 x sp 2 \+ 1 decode rank\), but --nproc is 6"),
        (2, "sp=two", r"sp must be a whole number, got 'two'"),
        (2, "sp=0,cfg=2", r"sp must be 1 or more, got 0"),
    ],
)
def test_bad_parallel_layouts_are_refused_before_any_worker_starts(monkeypatch: pytest.MonkeyPatch, nproc: int, parallel: str, message: str) -> None:
    monkeypatch.setattr(launch, "_launch", lambda args: pytest.fail("no worker may start"))
    for name in ("LOCAL_RANK", "WORLD_SIZE"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(InputError, match=message):
        relaunch(nproc, ["render"], parallel)


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
