"""The pipeline hints the exact next stage through N- and I-chunks; the runtime acts on hints at the right time."""

from __future__ import annotations

from itertools import pairwise

import numpy as np
import torch

from avatarstream.pipeline.observer import ChunkDone, RunObserver
from avatarstream.runtime.module import Module
from avatarstream.runtime.residency import Runtime
from runtime.helpers import deep_family, deep_pipeline, render


class RecordingRuntime(Runtime):
    def __init__(self, device: torch.device, policies: dict[str, str] | None = None) -> None:
        super().__init__(device, policies)
        self.calls: list[tuple[str, tuple[str, ...], tuple[str, ...]]] = []

    def stage_starts(self, stage: str, modules: tuple[Module, ...], upcoming: tuple[Module, ...]) -> None:
        self.calls.append((stage, tuple(m.name for m in modules), tuple(m.name for m in upcoming)))
        super().stage_starts(stage, modules, upcoming)


class ChunkKinds(RunObserver):
    def __init__(self) -> None:
        self.kinds: list[str] = []

    def on_chunk(self, done: ChunkDone) -> None:
        self.kinds.append(done.chunk.kind)


def test_every_hint_names_the_stage_that_runs_next() -> None:
    pipeline = deep_pipeline({"default": "offloaded"})
    runtime = RecordingRuntime(pipeline.device, {"default": "offloaded"})
    pipeline.runtime = runtime
    kinds = ChunkKinds()
    render(pipeline, observers=[kinds])
    assert "N" in kinds.kinds and "I" in kinds.kinds
    calls = runtime.calls
    for (stage, _, hinted), (following, modules, _) in pairwise(calls):
        assert hinted == modules, f"{stage} hinted {hinted} but {following} ran with {modules}"
    order = [stage for stage, _, _ in calls]
    transitions = set(pairwise(order))
    # a held-back N-chunk goes straight to the next chunk; a chunk publishing two stretches runs the final stages twice
    assert {("audio_to_video", "context_gen"), ("audio_to_video", "super_resolution"), ("decode", "super_resolution"), ("decode", "context_gen")} <= transitions


def linear(name: str) -> Module:
    return Module.build(name, lambda: torch.nn.Linear(4, 4), seed=1)


def test_prefetch_waits_for_the_stage_to_queue_its_first_forward() -> None:
    a, b = linear("a"), linear("b")
    runtime = Runtime(torch.device("cpu"), {"default": "offloaded"})
    runtime.stage_starts("first", (a,), (b,))
    assert runtime.residency(b).device_bytes() == 0  # not yet: the copy would delay this stage's first kernel
    a.network(torch.ones(4))
    assert runtime.residency(b).device_bytes() > 0
    runtime.stage_ends("first", (a,))
    assert runtime.residency(a).device_bytes() == 0 and runtime.residency(b).device_bytes() > 0


class Codec(torch.nn.Module):
    """Driven through a method, like the VAE's ``decode``."""

    def __init__(self) -> None:
        super().__init__()
        self.inner = torch.nn.Linear(4, 4)

    def decode(self, x: torch.Tensor) -> torch.Tensor:
        return self.inner(x)


def test_a_module_driven_by_another_method_prefetches_when_it_starts() -> None:
    codec, b = Module.build("codec", Codec, seed=1), linear("b")
    runtime = Runtime(torch.device("cpu"), {"default": "offloaded"})
    seen: list[int] = []
    runtime.stage_starts("decode", (codec,), (b,))
    codec.network.inner.register_forward_hook(lambda *_: seen.append(runtime.residency(b).device_bytes()))
    codec.network.decode(torch.ones(4))
    assert seen[0] > 0  # issued before the decoder computed, so the copy overlaps it


def test_a_stage_without_forwards_still_prefetches_by_its_end() -> None:
    a = linear("a")
    runtime = Runtime(torch.device("cpu"), {"default": "offloaded"})
    runtime.stage_starts("empty", (), (a,))
    assert runtime.residency(a).device_bytes() == 0
    runtime.stage_ends("empty", ())
    assert runtime.residency(a).device_bytes() > 0


def test_a_module_the_next_stage_uses_again_stays() -> None:
    a = linear("a")
    runtime = Runtime(torch.device("cpu"), {"default": "offloaded"})
    runtime.stage_starts("one", (a,), (a,))
    runtime.stage_ends("one", (a,))
    moved = runtime.h2d_bytes
    runtime.stage_starts("two", (a,), ())
    runtime.stage_ends("two", (a,))
    assert runtime.h2d_bytes == moved
    assert runtime.residency(a).device_bytes() == 0


def test_figures_per_chunk_and_per_switch() -> None:
    a, b = linear("a"), linear("b")
    runtime = Runtime(torch.device("cpu"), {"default": "offloaded"})
    size = runtime.residency(a).copy.pack.nbytes
    for _ in range(2):
        for stage, module, following in (("sa", a, b), ("sb", b, a)):
            runtime.stage_starts(stage, (module,), (following,))
            module.network(torch.ones(4))
            runtime.stage_ends(stage, (module,))
        stats = runtime.take_chunk_stats()
        assert stats["peak_device_bytes"] is None
        assert stats["peak_weight_bytes"] == 2 * size  # the running module plus the prefetched next one
    assert stats["h2d_bytes"] == 2 * size
    assert runtime.h2d_bytes == 4 * size + size  # the very first stage moved its module without a hint
    switches = runtime.switch_summary()
    assert switches["sa->sb"]["count"] == 2 and switches["sb->sa"]["count"] == 1
    assert 0 < switches["sa->sb"]["mean_ms"] <= switches["sa->sb"]["max_ms"]
    summary = runtime.summary()
    assert summary["policies"] == {"a": "offloaded", "b": "offloaded"} and summary["peak_weight_bytes"] == 2 * size


def hook_count(module: Module) -> int:
    network = module.network
    parts = [network, *network.children(), *network.blocks]
    return sum(len(m._forward_pre_hooks) + len(m._forward_hooks) for m in parts)


def test_a_new_pipeline_takes_the_modules_over() -> None:
    """Benchmarks build a pipeline per run from one family: hooks and device buffers must not pile up."""
    family = deep_family()
    first = deep_pipeline({"default": "offloaded"}, family)
    frames = render(first)
    a2v = family.modules["a2v_dit"]
    hooks = hook_count(a2v)
    copy = first.runtime.residency(a2v).copy
    for residency in ({"a2v_dit": "streamed:2"}, {}, {"default": "offloaded"}):
        np.testing.assert_array_equal(render(deep_pipeline(residency, family)), frames)
    assert copy.buffer is None  # the first runtime let go of its device copy
    assert hook_count(a2v) == hooks
