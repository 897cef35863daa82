"""CPU threads that follow the machine: every core while it is quiet, one thread while another program competes.

OpenMP's idle workers spin for a moment after each parallel operator before
they sleep (its default wait policy). On a quiet machine that is the fastest
setting for a model of many small operators: a worker is awake when the next
operator starts. Next to another busy program the spinning workers take the
cores that program and the render's own main thread need, and the same render
ran eight times slower. Sleeping workers (``OMP_WAIT_POLICY=PASSIVE``) halve
that loss but cost a fifth of the quiet speed, and OpenMP reads the policy only
once, when torch loads.

So the policy stays OpenMP's and the thread count follows the machine: at
chunk boundaries ``ThreadGovernor.poll`` reads how much CPU time other
programs took on this process's cores since the last look (``/proc/stat``
minus ``/proc/self/stat``). Above ``busy_above`` cores it runs torch on one
thread (no team, nothing to spin); below ``quiet_below`` it goes back to every
core. torch keeps the thread count per thread, so every thread that runs
operators applies it (``cpu_threads.fit_threads``: the chunk loop and the
finalize worker do).
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass

STAT = "/proc/stat"
SELF_STAT = "/proc/self/stat"


@dataclass(frozen=True)
class CpuSample:
    """Clock ticks: busy time of this process's cores, and this process's own CPU time (all its threads)."""

    cores_busy: int
    own: int


def read_sample(cores: frozenset[int]) -> CpuSample | None:
    """The counters now, or None where the kernel does not expose them (not Linux)."""
    try:
        with open(STAT, encoding="ascii") as stat:
            lines = stat.read().splitlines()
        with open(SELF_STAT, encoding="ascii") as own:
            fields = own.read().rsplit(")", 1)[1].split()  # after the command name, which may hold spaces
    except OSError:
        return None
    busy = 0
    for line in lines:
        name, _, values = line.partition(" ")
        if name.startswith("cpu") and name[3:].isdigit() and int(name[3:]) in cores:
            ticks = [int(v) for v in values.split()]
            busy += sum(ticks[:8]) - ticks[3] - ticks[4]  # user nice system idle iowait irq softirq steal: all but idle and iowait
    return CpuSample(busy, int(fields[11]) + int(fields[12]))  # utime, stime (fields 14 and 15 of the whole line)


class ThreadGovernor:
    """Chooses torch's CPU thread count from the load other programs put on this process's cores."""

    def __init__(self, full_threads: int, cores: frozenset[int], *, min_interval_s: float = 0.5, busy_above: float = 0.5, quiet_below: float = 0.25) -> None:
        """``busy_above`` / ``quiet_below``: other programs' load on ``cores``, in cores, that takes one thread / gives every one back."""
        self.full_threads, self.cores = full_threads, cores
        self.min_interval_s, self.busy_above, self.quiet_below = min_interval_s, busy_above, quiet_below
        self._ticks_per_s = os.sysconf("SC_CLK_TCK")
        self._lock = threading.Lock()
        self.threads = full_threads
        self.others_cores = 0.0  # what other programs used at the last look, in cores
        self.switches = 0
        self._reduced_s = 0.0  # closed stretches on fewer threads
        self._reduced_since = 0.0  # when the open one began
        self._last = (time.monotonic(), read_sample(cores))

    @property
    def readable(self) -> bool:
        """Whether the machine's counters could be read (the governor does nothing otherwise)."""
        return self._last[1] is not None

    def poll(self) -> None:
        """Look at the machine if ``min_interval_s`` has passed since the last look, and choose the thread count."""
        with self._lock:
            now = time.monotonic()
            then, before = self._last
            if before is None or now - then < self.min_interval_s:
                return
            sample = read_sample(self.cores)
            if sample is None:
                return
            self._last = (now, sample)
            others_ticks = (sample.cores_busy - before.cores_busy) - (sample.own - before.own)
            self.others_cores = max(0.0, others_ticks / self._ticks_per_s / (now - then))
            wanted = 1 if self.others_cores > self.busy_above else self.full_threads if self.others_cores < self.quiet_below else self.threads
            if wanted != self.threads:
                if wanted < self.full_threads:
                    self._reduced_since = now
                else:
                    self._reduced_s += now - self._reduced_since
                self.threads = wanted
                self.switches += 1

    def seconds_on_fewer_threads(self) -> float:
        with self._lock:
            open_stretch = time.monotonic() - self._reduced_since if self.threads < self.full_threads else 0.0
            return self._reduced_s + open_stretch

    def report(self) -> dict[str, object]:
        return {"threads_now": self.threads, "other_programs_cores": round(self.others_cores, 2), "switches": self.switches,
                "seconds_on_fewer_threads": round(self.seconds_on_fewer_threads(), 2)}  # fmt: skip
