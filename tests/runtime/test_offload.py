"""The offloaded policy: one packed host buffer, moved in on acquire, released by repointing (never copied back)."""

from __future__ import annotations

import weakref

import torch

from avatarstream.runtime.module import Module
from avatarstream.runtime.offload import Offloaded
from avatarstream.runtime.residency import Runtime
from runtime.helpers import EventLog, on_host


def make_module() -> Module:
    network = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.LayerNorm(16), torch.nn.Linear(16, 4))
    network.register_buffer("scale", torch.tensor([2.0]))
    return Module.build("net", lambda: network, seed=3)


def tensors(module: Module) -> list[torch.Tensor]:
    return [*module.network.parameters(), *module.network.buffers()]


def test_acquire_moves_one_packed_buffer_and_release_repoints_to_it() -> None:
    module = make_module()
    x = torch.randn(3, 8)
    expected = module.network(x)
    runtime = Runtime(torch.device("cpu"), {"net": "offloaded"})
    runtime.bind([module])
    host = runtime.residency(module).copy.pack.host
    assert on_host(tensors(module), host)  # one contiguous host buffer holds every parameter and buffer
    assert not host.is_pinned()  # a CPU build never pins

    runtime.acquire([module])
    device = runtime.residency(module).copy.buffer
    assert device is not None and on_host(tensors(module), device) and not on_host(tensors(module), host)
    assert runtime.h2d_bytes == host.numel()
    torch.testing.assert_close(module.network(x), expected, rtol=0, atol=0)

    with torch.no_grad():
        for t in tensors(module):
            t.add_(1.0)  # change the device copy: a copy-back would carry this to the host
    gone = weakref.ref(device)
    del device
    runtime.release([module])
    assert on_host(tensors(module), host)
    assert gone() is None  # nothing left behind on the device
    assert runtime.residency(module).device_bytes() == 0
    torch.testing.assert_close(module.network(x), expected, rtol=0, atol=0)


def test_a_prefetched_module_is_not_copied_again() -> None:
    module = make_module()
    runtime = Runtime(torch.device("cpu"), {"net": "offloaded"})
    runtime.prefetch([module])
    moved = runtime.h2d_bytes
    assert moved > 0 and runtime.residency(module).device_bytes() == moved
    runtime.acquire([module])
    assert runtime.h2d_bytes == moved


def test_close_hands_the_module_back_on_the_host_without_hooks() -> None:
    module = make_module()
    x = torch.randn(2, 8)
    expected = module.network(x)
    runtime = Runtime(torch.device("cpu"), {"net": "offloaded"})
    runtime.acquire([module])
    runtime.close()
    assert not module.network._forward_hooks
    torch.testing.assert_close(module.network(x), expected, rtol=0, atol=0)


def test_acquire_waits_for_the_copy_event_not_the_host() -> None:
    module = make_module()
    ops = EventLog()
    policy = Offloaded(module, ops)
    policy.prefetch()
    policy.acquire()
    (copied, event, _), (waited, on, _) = ops.log
    assert (copied, waited) == ("copied", "compute waits") and on == event
