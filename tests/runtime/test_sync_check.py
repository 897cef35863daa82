"""What the sync check sees: each host-synchronizing tensor operation reaches the torch function mode and is named; host
tensors, operations that do not sync and the declared host reads pass.

On a CPU run a tensor made before the check (a weight) or with ``device=`` is the device's; one made without a device is
the host's, as it would be on a GPU.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
import torch

from avatarstream.runtime.host_reads import host_read
from avatarstream.runtime.sync_check import SyncCheck
from avatarstream.runtime.sync_ops import Places

CPU = torch.device("cpu")
Case = Callable[[torch.Tensor], object]

#: case -> (what it does with a device tensor d, the operation the check names)
SYNCS: dict[str, tuple[Case, str]] = {
    "item": (lambda d: d[0].item(), "Tensor.item"),
    "tolist": (lambda d: d.tolist(), "Tensor.tolist"),
    "numpy": (lambda d: d.numpy(), "Tensor.numpy"),
    "cpu": (lambda d: d.cpu(), "Tensor.cpu"),
    "if": (lambda d: 1 if d[0] else 0, "Tensor.__bool__"),
    "int": (lambda d: int(d[0]), "Tensor.__int__"),
    "float": (lambda d: float(d[0]), "Tensor.__float__"),
    "list index": (lambda d: [1, 2, 3][d[0].long()], "Tensor.__index__"),
    "format": (lambda d: f"{d[0]:.2f}", "Tensor.__format__"),
    "repr": (lambda d: repr(d), "Tensor.__repr__"),
    "np.asarray": (lambda d: np.asarray(d), "Tensor.__array__"),
    "in": (lambda d: 2.0 in d, "Tensor.__contains__"),
    "equal": (lambda d: torch.equal(d, d), "equal"),
    "allclose": (lambda d: torch.allclose(d, d), "allclose"),
    "nonzero": (lambda d: d.nonzero(), "Tensor.nonzero"),
    "where": (lambda d: torch.where(d > 1), "where"),
    "masked_select": (lambda d: torch.masked_select(d, d > 1), "masked_select"),
    "unique": (lambda d: torch.unique(d), "functional.unique"),
    "repeat_interleave": (lambda d: d.repeat_interleave(d.long()), "Tensor.repeat_interleave"),
    "mask read": (lambda d: d[d > 1], "Tensor.__getitem__"),
    "mask write of many": (lambda d: d.clone().__setitem__(d > 1, d[:2] * 0), "Tensor.__setitem__"),
    "host index": (lambda d: d[torch.tensor([0, 1])], "Tensor.__getitem__"),
    "full": (lambda d: torch.full((2,), d[0]), "full"),
    "arange": (lambda d: torch.arange(d[-1]), "arange"),
}

#: cases that do not sync: the device's tensors used on the device, the host's read on the host
QUIET: dict[str, Case] = {
    "arithmetic": lambda d: (d * 2 + 1).sum(),
    "shape": lambda d: (d.shape[0], d.size(0), len(d), d.dim()),
    "dtype move": lambda d: d.to(torch.float64),
    "device index": lambda d: d[torch.tensor([0, 1], device=CPU)],
    "int repeats": lambda d: d.repeat_interleave(2),
    "mask write of one value": lambda d: d.clone().__setitem__(d > 1, 0),
    "host schedule": lambda d: torch.linspace(1, 0, 5).tolist(),
    "host draw": lambda d: [int(v) for v in torch.randint(0, 9, (3,), generator=torch.Generator().manual_seed(0))],
    "host from numpy": lambda d: torch.as_tensor(np.ones(3)).sum().item(),  # torch.from_numpy does not reach the mode
    "allowed read": lambda d: _read_frames(d),
}


def _read_frames(d: torch.Tensor) -> object:
    with host_read("frames"):
        return d.numpy()


def _seen(case: Case) -> list[str]:
    check = SyncCheck(CPU)
    with check.around():
        device_tensor = torch.tensor([0.5, 2.0, 3.0], device=CPU)
        check.steady = True
        case(device_tensor)
    return [sync.op for sync in check.found]


@pytest.mark.parametrize("case", list(SYNCS))
def test_each_kind_of_sync_is_seen_and_named(case: str) -> None:
    run, name = SYNCS[case]
    assert _seen(run) == [name]


@pytest.mark.parametrize("case", list(QUIET))
def test_what_does_not_sync_passes(case: str) -> None:
    assert _seen(QUIET[case]) == []


def test_a_tensor_made_with_a_device_moved_there_or_before_the_check_is_the_devices() -> None:
    weight = torch.ones(2)
    check = SyncCheck(CPU)
    check.steady = True
    with check.around():
        torch.zeros(2, device=CPU).tolist()
        torch.linspace(0, 1, 3).to(CPU).tolist()
        (torch.ones(2) + torch.zeros(2, device=CPU)).tolist()  # host and device make the device's
        weight.tolist()
        weight[torch.tensor([0])]  # a host index into a weight: not judged (a host table, made before, looks the same)
    assert [sync.op for sync in check.found] == ["Tensor.tolist"] * 4


def test_before_the_steady_state_nothing_counts_and_the_first_stretch_starts_it() -> None:
    check = SyncCheck(CPU)
    with check.around():
        torch.ones(1).item()
        with host_read("frames"):
            pass
        torch.zeros(1, device=CPU).item()
    assert check.steady and [sync.op for sync in check.found] == ["Tensor.item"]


def test_a_host_read_must_be_declared() -> None:
    with pytest.raises(KeyError, match="not an allowed host read"), host_read("latents"):
        pass


def test_copies_to_the_host_are_judged_where_the_device_is_not_the_host() -> None:
    """``meta`` stands in for a GPU: the calls are classified, not run."""
    places = Places(torch.device("meta"))
    on_device, on_host = torch.empty(2, device="meta"), torch.empty(2)
    assert places.sync_of(torch.Tensor.to, (on_device, "cpu"), {}) == "Tensor.to"
    assert places.sync_of(torch.Tensor.to, (on_device,), {"device": CPU}) == "Tensor.to"
    assert places.sync_of(torch.Tensor.copy_, (on_host, on_device), {}) == "Tensor.copy_"
    assert places.sync_of(torch.Tensor.to, (on_device, torch.float16), {}) is None
    assert places.sync_of(torch.Tensor.item, (on_host,), {}) is None
    assert places.sync_of(torch.Tensor.__getitem__, (on_device, on_host.long()), {}) == "Tensor.__getitem__"
