"""CPU threads follow the machine: every core while it is quiet, one thread beside busy programs, and back.

The load is real: busy-looping processes on every core of this process.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
import torch

from avatarstream.runtime import cpu_threads
from avatarstream.runtime.cpu_contention import ThreadGovernor, read_sample
from avatarstream.runtime.device_ops import DeviceOps
from avatarstream.runtime.overlap import StreamWorker

CORES = frozenset(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else frozenset()
pytestmark = pytest.mark.skipif(len(CORES) < 2 or read_sample(CORES) is None, reason="needs 2 cores and Linux's CPU counters")


@contextmanager
def busy_programs() -> Iterator[None]:
    """One busy loop per core, in other processes, until the block ends."""
    loops = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in CORES]
    try:
        yield
    finally:
        for loop in loops:
            loop.kill()
            loop.wait()


def settle(governor: ThreadGovernor) -> None:
    """One full window of the machine as it is now, then a look."""
    time.sleep(governor.min_interval_s)
    governor.poll()  # the window that straddles the change
    time.sleep(governor.min_interval_s * 2)
    governor.poll()


def test_the_governor_takes_one_thread_beside_busy_programs_and_every_core_after_them() -> None:
    governor = ThreadGovernor(len(CORES), CORES, min_interval_s=0.3)
    settle(governor)
    quiet_before = governor.others_cores < governor.quiet_below  # other tests' programs may be running (a parallel suite, a busy workstation)
    with busy_programs():
        settle(governor)
        assert governor.threads == 1 and governor.others_cores > governor.busy_above, governor.report()
    if not quiet_before:
        pytest.skip(f"the machine was busy before the test ({governor.report()}): every core cannot come back")
    for _ in range(5):  # a few windows: other programs' short bursts (a test's own subprocesses) may delay it
        settle(governor)
        if governor.threads == len(CORES):
            break
    assert governor.threads == len(CORES) and governor.others_cores < governor.quiet_below, governor.report()
    report = governor.report()
    assert report["switches"] >= 2 and report["seconds_on_fewer_threads"] > 0, report


def test_a_worker_thread_follows_the_run_and_a_count_set_by_someone_else_stands(monkeypatch: pytest.MonkeyPatch) -> None:
    before = torch.get_num_threads()
    governor = ThreadGovernor(len(CORES), CORES, min_interval_s=0.3)  # a shorter window than the process's, for a quick test
    monkeypatch.setattr(cpu_threads, "_machine_governor", lambda: governor)
    worker: StreamWorker[int] = StreamWorker(DeviceOps(torch.device("cpu")), "test")
    try:
        torch.set_num_threads(len(CORES))  # torch's default, which this module's fixture changed
        cpu_threads.set_threads(None)
        assert worker.take(worker.submit(torch.get_num_threads)) == len(CORES), "every core before the governor has seen any load"
        with busy_programs():
            time.sleep(0.6)
            cpu_threads.fit_threads()
            assert torch.get_num_threads() == 1, cpu_threads.cpu_report()
            assert worker.take(worker.submit(torch.get_num_threads)) == 1, "the worker thread takes the governor's count too"
            cpu_threads.restore_threads()
            assert torch.get_num_threads() == len(CORES), "a count the governor chose ends with the run"
            torch.set_num_threads(len(CORES) + 1)  # a program's own choice (other than torch's default), on its own thread
            time.sleep(0.6)
            cpu_threads.fit_threads()
            assert cpu_threads.cpu_report()["follows_machine"]["threads_now"] == 1  # type: ignore[index]
            assert torch.get_num_threads() == len(CORES) + 1, "a count set by someone else stands, even beside busy programs"
    finally:
        worker.shutdown()
        cpu_threads.set_threads(before)  # as the module's fixture left it: chosen, not followed
