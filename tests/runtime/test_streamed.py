"""The streamed policy: never more than its slot count of blocks on the device, identical outputs, nothing left behind."""

from __future__ import annotations

import functools
import weakref

import pytest
import torch

from avatarstream.runtime.module import Module
from avatarstream.runtime.residency import Runtime
from avatarstream.runtime.streamed import Streamed
from runtime.helpers import A2V_LAYERS, EventLog, dit_cases, on_host


def a2v_module() -> Module:
    return dit_cases()["a2v_dit"][0]


@functools.cache
def a2v_inputs() -> tuple[torch.Tensor, ...]:
    return dit_cases()["a2v_dit"][1]


class DeviceCensus:
    """At every block's forward, counts blocks whose weights are off their host buffers, and the distinct device storages."""

    def __init__(self, module: Module, runtime: Runtime) -> None:
        policy = runtime.residency(module)
        self.block_hosts = [pack.host for pack in policy.blocks]
        self.blocks = list(module.network.blocks)
        self.most_blocks = 0
        self.most_bytes = 0
        self.running_on_device = True
        for i, block in enumerate(self.blocks):
            block.register_forward_pre_hook(lambda _m, _a, i=i: self.count(i))  # after the policy's own hook

    def on_device(self) -> list[int]:
        return [i for i, (b, host) in enumerate(zip(self.blocks, self.block_hosts, strict=True)) if not on_host(list(b.parameters()), host)]

    def count(self, running: int) -> None:
        on_device = self.on_device()
        self.running_on_device &= running in on_device
        storages = {t.untyped_storage().data_ptr(): t.untyped_storage().nbytes() for i in on_device for t in self.blocks[i].parameters()}
        self.most_blocks = max(self.most_blocks, len(on_device))
        self.most_bytes = max(self.most_bytes, sum(storages.values()))


def denoise(module: Module, runtime: Runtime, steps: int) -> list[torch.Tensor]:
    """One stage that calls the network ``steps`` times, like the sampler does."""
    runtime.stage_starts("a2v", (module,), ())
    with torch.inference_mode():
        outputs = [module.network(*a2v_inputs()) for _ in range(steps)]
    runtime.stage_ends("a2v", (module,))
    return outputs


@pytest.mark.parametrize("slots", [1, 2, 3, A2V_LAYERS, A2V_LAYERS + 3])
def test_slot_count_is_never_exceeded_and_outputs_match_resident(slots: int) -> None:
    module = a2v_module()
    with torch.inference_mode():
        expected = module.network(*a2v_inputs())
    runtime = Runtime(torch.device("cpu"), {"a2v_dit": f"streamed:{slots}"})
    runtime.bind([module])
    census = DeviceCensus(module, runtime)
    policy = runtime.residency(module)

    for out in denoise(module, runtime, steps=3):
        torch.testing.assert_close(out, expected, rtol=0, atol=0)
    assert census.running_on_device
    assert census.most_blocks == min(slots, A2V_LAYERS)
    assert census.most_bytes <= min(slots, A2V_LAYERS) * policy.slot_bytes


def test_block_copies_overlap_and_wrap_around_to_the_next_step() -> None:
    slots = 2
    module = a2v_module()
    runtime = Runtime(torch.device("cpu"), {"a2v_dit": f"streamed:{slots}"})
    runtime.bind([module])
    census = DeviceCensus(module, runtime)
    policy = runtime.residency(module)
    block = policy.blocks[0].nbytes
    assert all(pack.nbytes == block for pack in policy.blocks)

    runtime.stage_starts("a2v", (module,), ())
    assert runtime.h2d_bytes == policy.rest.pack.nbytes + slots * block  # the first blocks arrive before the first forward
    assert census.on_device() == [0, 1]
    with torch.inference_mode():
        module.network(*a2v_inputs())
        assert census.on_device() == [0, A2V_LAYERS - 1]  # block 0 was fetched for the next step while the last one ran
        after_first = runtime.h2d_bytes
        module.network(*a2v_inputs())
    assert runtime.h2d_bytes - after_first == A2V_LAYERS * block  # every block once per step, nothing more
    runtime.stage_ends("a2v", (module,))


def test_each_block_is_one_contiguous_host_buffer() -> None:
    module = a2v_module()
    runtime = Runtime(torch.device("cpu"), {"a2v_dit": "streamed:2"})
    runtime.bind([module])
    policy = runtime.residency(module)
    for block, pack in zip(module.network.blocks, policy.blocks, strict=True):
        assert on_host([*block.parameters(), *block.buffers()], pack.host)
        assert not pack.host.is_pinned()
    rest = [t for name, t in module.network.named_parameters() if not name.startswith("blocks.")]
    assert on_host(rest, policy.rest.pack.host)


def test_release_leaves_no_device_memory_behind() -> None:
    module = a2v_module()
    runtime = Runtime(torch.device("cpu"), {"a2v_dit": "streamed:2"})
    runtime.bind([module])
    census = DeviceCensus(module, runtime)
    policy = runtime.residency(module)
    runtime.acquire([module])
    device = [weakref.ref(slot) for slot in policy.slots] + [weakref.ref(policy.rest.buffer)]
    assert policy.device_bytes() == policy.rest.pack.nbytes + 2 * policy.slot_bytes
    with torch.inference_mode():
        module.network(*a2v_inputs())
    runtime.release([module])
    assert census.on_device() == []
    assert on_host(list(module.network.patch_in.parameters()), policy.rest.pack.host)
    assert all(ref() is None for ref in device)
    assert policy.device_bytes() == 0


def test_per_slot_events_order_copies_and_compute() -> None:
    """Compute waits for the copy of the block it runs; a slot is refilled only after its last block's compute event."""
    module = a2v_module()
    ops = EventLog()
    policy = Streamed(module, ops, slots=2)
    ran: list[tuple[int, int]] = []  # (block, storage) at each block's forward, after the policy's hook
    for i, block in enumerate(module.network.blocks):
        block.register_forward_pre_hook(lambda m, _a, i=i: ran.append((i, next(m.parameters()).untyped_storage().data_ptr())))
        block.register_forward_pre_hook(lambda _m, _a, i=i: ops.log.append(("runs", i, 0)))
    policy.acquire()
    with torch.inference_mode():
        for _ in range(2):
            module.network(*a2v_inputs())
    policy.release()

    last_copy: dict[int, int] = {}  # slot storage -> event of the last copy into it
    last_wait = 0
    computed_since_fill: dict[int, int] = {}
    pending_copy_wait = 0
    for what, event, storage in ops.log:
        if what == "copied":
            if storage in last_copy:  # refilling: the copy stream waited for the compute that used this slot
                assert pending_copy_wait == computed_since_fill[storage]
            last_copy[storage] = event
        elif what == "copy waits":
            pending_copy_wait = event
        elif what == "compute waits":
            last_wait = event
        elif what == "runs":
            block, block_storage = ran.pop(0)
            assert block == event and last_wait == last_copy[block_storage]
            running = block_storage
        elif what == "computed":
            computed_since_fill[running] = event
    assert not ran
