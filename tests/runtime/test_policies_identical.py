"""Every policy renders exactly the frames the resident policy renders, on a CPU build that never touches CUDA."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from avatarstream.benchmarks.compare import compare_policies, standard_configs
from avatarstream.runtime.device_ops import device_ops
from runtime.helpers import deep_family, deep_pipeline, render, request


@pytest.fixture(scope="module")
def resident_frames() -> np.ndarray:
    return render(deep_pipeline())


@pytest.fixture(autouse=True)
def no_cuda(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any stream, event or pinned-memory call on a CPU build fails the test."""

    def refuse(*_args, **_kwargs):
        raise AssertionError("CUDA touched on a CPU-only build")

    for name in ("Stream", "Event", "stream", "current_stream", "synchronize"):
        monkeypatch.setattr(torch.cuda, name, refuse)
    monkeypatch.setattr(torch.Tensor, "pin_memory", refuse)


@pytest.mark.parametrize(
    "residency",
    [
        {"default": "offloaded"},
        {"a2v_dit": "streamed:2", "sr_dit": "streamed:1", "default": "offloaded"},
        {"a2v_dit": "streamed:3", "sr_dit": "streamed:8"},
        {"vae": "offloaded", "a2v_dit": "streamed"},
    ],
    ids=lambda r: ",".join(f"{k}={v}" for k, v in r.items()),
)
def test_frames_equal_resident(residency: dict[str, str], resident_frames: np.ndarray) -> None:
    pipeline = deep_pipeline(residency)
    np.testing.assert_array_equal(render(pipeline), resident_frames)
    assert pipeline.runtime.h2d_bytes > 0
    assert not pipeline.runtime.sequential_only


@pytest.mark.parametrize("residency", [{"default": "offloaded"}, {"a2v_dit": "streamed:2", "sr_dit": "streamed:2", "default": "offloaded"}])
def test_frames_equal_resident_when_final_stages_overlap(residency: dict[str, str], resident_frames: np.ndarray) -> None:
    """Final stages run on a worker thread while the next chunk generates: two lanes of stages share the runtime."""
    pipeline = deep_pipeline(residency, overlap=True)
    np.testing.assert_array_equal(render(pipeline), resident_frames)
    switches = pipeline.runtime.switch_summary()
    assert "super_resolution->decode" in switches and "context_gen->audio_to_video" in switches
    modules = {m.name: m for stage in pipeline.stages for m in stage.modules()}
    assert pipeline.runtime.residency(modules["a2v_dit"]).device_bytes() == pipeline.runtime.residency(modules["sr_dit"]).device_bytes() == 0


def test_cpu_flavour_has_no_streams() -> None:
    ops = device_ops(torch.device("cpu"))
    assert ops.copy_stream is None and ops.new_stream() is None and ops.compute_event() is None
    assert not ops.pins_memory and not ops.host_buffer(64).is_pinned()


def test_compare_policies_side_by_side() -> None:
    family = deep_family()
    results = compare_policies(
        lambda residency: deep_pipeline(residency, family),
        standard_configs(["a2v_dit", "sr_dit"]),
        request,
    )
    assert list(results) == ["resident", "offloaded", "streamed:2"]
    assert all(r["outputs_identical"] for r in results.values())
    assert all(r["chunks"] == results["resident"]["chunks"] > 0 for r in results.values())
    assert results["resident"]["h2d_bytes_per_chunk"] == 0
    assert results["offloaded"]["h2d_bytes_per_chunk"] > 0 and results["streamed:2"]["h2d_bytes_per_chunk"] > 0
    assert results["streamed:2"]["peak_weight_bytes"] < results["offloaded"]["peak_weight_bytes"] < results["resident"]["peak_weight_bytes"]
    assert all(r["peak_device_bytes"] is None for r in results.values())  # no device allocator on CPU
    assert all(r["switch_ms_max"] >= r["switch_ms_mean"] > 0 for r in results.values())
