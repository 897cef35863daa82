"""NUMA binding reads the topology from sysfs; a fake sysfs tree stands in for a two-socket node."""

from __future__ import annotations

from pathlib import Path

import pytest

from avatarstream.runtime import placement
from avatarstream.runtime.placement import Binding, node_cpus, parse_cpulist, pci_numa_node, plan_binding

GPU = "0000:3b:00.0"


def fake_sysfs(root: Path, nodes: dict[int, str], gpus: dict[str, str]) -> Path:
    for node, cpulist in nodes.items():
        (root / f"devices/system/node/node{node}").mkdir(parents=True)
        (root / f"devices/system/node/node{node}/cpulist").write_text(cpulist + "\n")
    (root / "devices/system/node/possible").parent.mkdir(parents=True, exist_ok=True)
    (root / "devices/system/node/possible").write_text("0-1\n")  # a file next to the node folders is ignored
    for bus_id, numa_node in gpus.items():
        (root / "bus/pci/devices" / bus_id).mkdir(parents=True)
        (root / "bus/pci/devices" / bus_id / "numa_node").write_text(numa_node + "\n")
    return root


def test_parse_cpulist() -> None:
    assert parse_cpulist("0-3,8,10-11\n") == [0, 1, 2, 3, 8, 10, 11]
    assert parse_cpulist("") == []


def test_two_node_machine(tmp_path: Path) -> None:
    sysfs = fake_sysfs(tmp_path, {0: "0-3,8-11", 1: "4-7,12-15"}, {GPU: "1", "0000:86:00.0": "-1"})
    assert node_cpus(sysfs) == {0: [0, 1, 2, 3, 8, 9, 10, 11], 1: [4, 5, 6, 7, 12, 13, 14, 15]}
    assert pci_numa_node("0000:3B:00.0", sysfs) == 1  # bus ids are matched case-insensitively
    assert pci_numa_node("0000:86:00.0", sysfs) is None  # the kernel does not know
    assert pci_numa_node("0000:99:00.0", sysfs) is None
    assert plan_binding(GPU, sysfs) == Binding(1, (4, 5, 6, 7, 12, 13, 14, 15))
    assert plan_binding(GPU, sysfs, allowed={4, 5, 20}) == Binding(1, (4, 5))
    assert plan_binding(GPU, sysfs, allowed={0}).node is None
    assert plan_binding("0000:86:00.0", sysfs).node is None
    assert plan_binding(None, sysfs).node is None


def test_single_node_machine_is_a_no_op(tmp_path: Path) -> None:
    sysfs = fake_sysfs(tmp_path, {0: "0-15"}, {GPU: "0"})
    assert plan_binding(GPU, sysfs) == Binding(None, note="single NUMA node: nothing to bind")
    assert plan_binding(GPU, tmp_path / "missing").node is None


def test_bind_sets_affinity_from_the_plan(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sysfs = fake_sysfs(tmp_path, {0: "0-1", 1: "2-3"}, {GPU: "1"})
    applied: list[tuple[int, ...]] = []
    monkeypatch.setattr(placement, "gpu_bus_id", lambda index: GPU)
    monkeypatch.setattr(placement.os, "sched_getaffinity", lambda pid: {0, 1, 2, 3})
    monkeypatch.setattr(placement.os, "sched_setaffinity", lambda pid, cpus: applied.append(tuple(cpus)))
    monkeypatch.setattr(placement, "_prefer_memory_node", lambda node: False)
    binding = placement.bind_to_gpu(0, sysfs)
    assert applied == [(2, 3)]
    assert binding == Binding(1, (2, 3), False, "libnuma not found: memory policy left as is")


def test_bind_on_this_machine_never_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(placement, "gpu_bus_id", lambda index: GPU)
    before = placement.os.sched_getaffinity(0)
    binding = placement.bind_to_gpu(0)
    if binding.node is None:
        assert placement.os.sched_getaffinity(0) == before
    else:  # a real multi-node host: restore what the test changed
        placement.os.sched_setaffinity(0, before)
