"""The collectives --parallel uses, timed on this node: all-to-all per group size and the decode rank's point-to-point.

Run under torchrun (``avatarstream bench --scenario parallel`` starts it):
``python -m torch.distributed.run --standalone --nproc-per-node N -m avatarstream.benchmarks.parallel_links OUT.json A2A_BYTES P2P_BYTES``.
Each figure is the median of several timed calls after a warm-up; latency is
a tiny message's time, bandwidth what a message of the size the session
moves (at least ``MIN_BYTES``, so the difference is measurable) adds to it.
Rank 0 writes the JSON.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist

from avatarstream.runtime.devices import synchronize
from avatarstream.runtime.launch import finish, init_rank

REPEATS = 7
SMALL_BYTES = 4096
MIN_BYTES = 1 << 20


def _timed(fn: Callable[[], None], device: torch.device, group: dist.ProcessGroup | None = None) -> float:
    fn()
    times = []
    for _ in range(REPEATS):
        dist.barrier(group=group)
        synchronize(device)
        start = time.perf_counter()
        fn()
        synchronize(device)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _link(small_s: float, large_s: float, nbytes: int) -> dict[str, float]:
    return {"latency_s": small_s, "bytes_per_s": (nbytes - SMALL_BYTES) / max(large_s - small_s, 1e-9)}


def _all_to_all(group: dist.ProcessGroup, size: int, nbytes: int, device: torch.device) -> float:
    values = max(nbytes // 4 // size * size, size)
    send, receive = torch.ones(values, device=device), torch.empty(values, device=device)
    return _timed(lambda: dist.all_to_all_single(receive, send, group=group), device, group)


def _all_gather(group: dist.ProcessGroup, size: int, nbytes: int, device: torch.device) -> float:
    local = torch.ones(max(nbytes // 4 // size, 1), device=device)
    parts = [torch.empty_like(local) for _ in range(size)]
    return _timed(lambda: dist.all_gather(parts, local, group=group), device, group)


def _point_to_point(last: int, nbytes: int, device: torch.device) -> float:
    tensor = torch.ones(max(nbytes // 4, 1), device=device)

    def exchange() -> None:
        if dist.get_rank() == 0:
            dist.send(tensor, last)
        elif dist.get_rank() == last:
            dist.recv(tensor, 0)

    return _timed(exchange, device)


def main(out: Path, a2a_bytes: int, p2p_bytes: int) -> None:
    info, device = init_rank(torch.device("cuda" if torch.cuda.is_available() else "cpu"))
    world = info.world_size
    a2a_bytes, p2p_bytes = max(a2a_bytes, MIN_BYTES), max(p2p_bytes, MIN_BYTES)
    sizes = sorted({s for s in (2, 4, 8, world) if s <= world})
    result: dict[str, Any] = {"processes": world, "backend": dist.get_backend(), "message_bytes": {"all_to_all": a2a_bytes, "point_to_point": p2p_bytes},
                              "all_to_all": {}, "all_gather": {}}  # fmt: skip
    for size in sizes:
        group = dist.new_group(list(range(size)))
        if info.rank < size:
            for name, collective in (("all_to_all", _all_to_all), ("all_gather", _all_gather)):
                small, large = collective(group, size, SMALL_BYTES, device), collective(group, size, a2a_bytes, device)
                result[name][str(size)] = _link(small, large, a2a_bytes)
        dist.barrier()
    small, large = _point_to_point(world - 1, SMALL_BYTES, device), _point_to_point(world - 1, p2p_bytes, device)
    result["point_to_point"] = _link(small, large, p2p_bytes)
    if info.publishes:
        out.write_text(json.dumps(result, indent=2))
    finish(info)


if __name__ == "__main__":
    main(Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]))
