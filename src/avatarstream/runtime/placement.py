"""Bind a rank to the NUMA node of its GPU (CPU affinity and preferred memory node).

The node comes from the system topology: ``/sys/bus/pci/devices/<bus id>/numa_node``
for the GPU and ``/sys/devices/system/node/node*/cpulist`` for the CPUs of
each node. CPU affinity is set with ``os.sched_setaffinity``; memory
allocations prefer the node through libnuma's ``numa_set_preferred`` when
libnuma is installed (skipped, and said so, when it is not). On a machine with
a single NUMA node, or where the topology is unknown, binding is a no-op.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
from dataclasses import dataclass
from pathlib import Path

import torch

SYSFS = Path("/sys")


@dataclass(frozen=True)
class Binding:
    """What was (or would be) applied, for the report."""

    node: int | None
    cpus: tuple[int, ...] = ()
    memory_preferred: bool = False
    note: str = ""


def parse_cpulist(text: str) -> list[int]:
    """``"0-3,8,10-11"`` -> ``[0, 1, 2, 3, 8, 10, 11]`` (the kernel's cpulist format)."""
    cpus: list[int] = []
    for part in filter(None, (p.strip() for p in text.split(","))):
        first, _, last = part.partition("-")
        cpus.extend(range(int(first), int(last or first) + 1))
    return cpus


def node_cpus(sysfs: Path = SYSFS) -> dict[int, list[int]]:
    """CPUs of every NUMA node the kernel reports (empty when there is no NUMA information)."""
    nodes: dict[int, list[int]] = {}
    for path in sorted((sysfs / "devices/system/node").glob("node[0-9]*")):
        cpulist = path / "cpulist"
        if cpulist.is_file():
            nodes[int(path.name[4:])] = parse_cpulist(cpulist.read_text())
    return nodes


def pci_numa_node(bus_id: str, sysfs: Path = SYSFS) -> int | None:
    """NUMA node of a PCI device (``0000:3b:00.0``), or None when the kernel does not know (-1) or the file is missing."""
    path = sysfs / "bus/pci/devices" / bus_id.lower() / "numa_node"
    try:
        node = int(path.read_text().strip())
    except (OSError, ValueError):
        return None
    return node if node >= 0 else None


def gpu_bus_id(index: int) -> str | None:
    """PCI bus id of CUDA device ``index`` in sysfs form, or None when torch cannot tell."""
    props = torch.cuda.get_device_properties(index)
    try:
        # the pci_* fields exist at runtime but are missing from torch's _CudaDeviceProperties stub
        return f"{props.pci_domain_id:04x}:{props.pci_bus_id:02x}:{props.pci_device_id:02x}.0"  # type: ignore[attr-defined]
    except AttributeError:
        return None


def plan_binding(bus_id: str | None, sysfs: Path = SYSFS, allowed: set[int] | None = None) -> Binding:
    """Where a process driving the GPU at ``bus_id`` should run; ``node`` is None when there is nothing to do."""
    nodes = node_cpus(sysfs)
    if len(nodes) <= 1:
        return Binding(None, note="single NUMA node: nothing to bind")
    node = pci_numa_node(bus_id, sysfs) if bus_id else None
    if node is None or node not in nodes:
        return Binding(None, note=f"NUMA node of GPU {bus_id} unknown: not bound")
    cpus = tuple(c for c in nodes[node] if allowed is None or c in allowed)
    if not cpus:
        return Binding(None, note=f"none of node {node}'s CPUs are allowed for this process: not bound")
    return Binding(node, cpus)


def bind_to_gpu(index: int, sysfs: Path = SYSFS) -> Binding:
    """Bind this process's CPUs (and preferred memory node) to CUDA device ``index``'s NUMA node."""
    plan = plan_binding(gpu_bus_id(index), sysfs, os.sched_getaffinity(0))
    if plan.node is None:
        return plan
    os.sched_setaffinity(0, plan.cpus)
    preferred = _prefer_memory_node(plan.node)
    return Binding(plan.node, plan.cpus, preferred, "" if preferred else "libnuma not found: memory policy left as is")


def _prefer_memory_node(node: int) -> bool:
    """``numa_set_preferred(node)`` through libnuma when it is installed."""
    name = ctypes.util.find_library("numa")
    if name is None:
        return False
    libnuma = ctypes.CDLL(name)
    if libnuma.numa_available() < 0:
        return False
    libnuma.numa_set_preferred(ctypes.c_int(node))
    return True
