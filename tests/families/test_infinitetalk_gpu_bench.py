"""The InfiniteTalk GPU benchmark: its CPU dry run writes every scenario, it skips what does not fit, and the
real-size builder makes the real networks (checked on the meta device: nothing is allocated)."""

from __future__ import annotations

import dataclasses
import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import psutil
import pytest
import torch

from avatarstream.families.infinitetalk import gpu_bench as bench
from avatarstream.families.infinitetalk.family import InfiniteTalkFamily
from avatarstream.families.infinitetalk.memory import real_weight_counts
from avatarstream.models.infinitetalk.dit import InfiniteTalkDiT
from avatarstream.stages.common import device_and_dtype

STAGES = {"reference_encode", "prompt_encode", "context_gen", "audio_to_video", "decode"}


@pytest.fixture(scope="module")
def dry_run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    out = tmp_path_factory.mktemp("infinitetalk-gpu")
    command = [sys.executable, "-m", "avatarstream.families.infinitetalk.gpu_bench", "--tiny", "--device", "cpu", "--threads", "1", "--out", str(out)]
    done = subprocess.run(command, env={**os.environ, "OMP_NUM_THREADS": "1"}, check=False, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "running: flashtalk" in done.stdout  # timestamped progress lines
    return json.loads((out / bench.RESULT_FILE).read_text())


@pytest.fixture(scope="module")
def tiny_family() -> bench.InfiniteTalkFamily:
    return InfiniteTalkFamily.from_networks(bench.build_networks(bench.tiny_sizes(), torch.device("cpu"), bench.DTYPE), "tiny")


def _positive(value: object) -> bool:
    return isinstance(value, (int, float)) and math.isfinite(value) and value > 0


def test_dry_run_measures_every_scenario(dry_run: dict[str, Any]) -> None:
    expected = [s.name for s in bench.TINY_PLAN.scenarios()]
    assert list(dry_run["scenarios"]) == expected
    assert {s.residency for s in bench.TINY_PLAN.scenarios()} == set(bench.RESIDENCIES)
    for name, record in dry_run["scenarios"].items():
        assert record["status"] == "ok", (name, record)
        for key in ("ttff_s", "fps_out", "realtime_factor", "steady_chunk_s", "wall_s"):
            assert _positive(record[key]), (name, key, record[key])
        assert set(record["stage_seconds"]) == STAGES
        assert record["max_exposed_switch_ms"] >= 0 and record["stage_switches"]
        assert record["peak_device_bytes"] is None  # no device allocator on a CPU


def test_dry_run_records_the_run(dry_run: dict[str, Any]) -> None:
    assert dry_run["tiny"] and dry_run["dtype"] == "bfloat16"
    assert {"date", "torch", "device"} <= set(dry_run["environment"])
    assert "sharded" in dry_run["not_run"]
    records = dry_run["scenarios"].values()
    assert all(r["h2d_bytes"] == 0 for r in records if r["residency"] == {"default": "resident"})
    assert all(r["h2d_bytes"] > 0 for r in records if r["residency"] == {"default": "offloaded"})
    weights = {(r["preset"], tuple(r["size"]), tuple(r["residency"].items())): r["peak_weight_bytes"] for r in records}
    for size in bench.TINY_PLAN.sizes:
        resident = weights[("flashtalk", size, (("default", "resident"),))]
        assert resident == dry_run["weight_bytes"]
        assert 0 < weights[("flashtalk", size, (("default", "offloaded"),))] < resident  # one stage's modules at a time


def test_flashtalk_renders_several_chunks_and_infinitetalk_one(dry_run: dict[str, Any]) -> None:
    for record in dry_run["scenarios"].values():
        assert record["num_chunks"] == (1 if record["preset"] == "infinitetalk" else 2)


def test_guided_preset_is_extrapolated_to_its_40_steps(dry_run: dict[str, Any]) -> None:
    (record,) = [r for r in dry_run["scenarios"].values() if r["preset"] == "infinitetalk"]
    assert record["steps_run"] == bench.TINY_PLAN.infinitetalk_steps and record["preset_steps"] == 40
    assert _positive(record["seconds_per_step"])
    assert record["chunk_s_at_preset_steps"] > record["wall_s"] - record["stage_seconds"]["reference_encode"] - record["stage_seconds"]["prompt_encode"]
    assert record["ttff_s_at_preset_steps"] > record["ttff_s"]


def test_out_of_memory_is_a_skip(tiny_family: bench.InfiniteTalkFamily, monkeypatch: pytest.MonkeyPatch) -> None:
    def no_memory(*args: object, **kwargs: object) -> None:
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 20.00 GiB")

    monkeypatch.setattr(tiny_family, "build", no_memory)
    record = bench.run_scenario(tiny_family, bench.TINY_PLAN.scenarios()[0], torch.device("cpu"), bench.bundled_speech(16000))
    assert record["status"] == "skipped" and record["reason"].startswith("out of memory: CUDA out of memory")


def test_other_errors_are_not_hidden(tiny_family: bench.InfiniteTalkFamily, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("mat1 and mat2 shapes cannot be multiplied")

    monkeypatch.setattr(tiny_family, "build", broken)
    with pytest.raises(RuntimeError, match="shapes"):
        bench.run_scenario(tiny_family, bench.TINY_PLAN.scenarios()[0], torch.device("cpu"), bench.bundled_speech(16000))


def test_spent_budget_and_short_host_memory_are_skips(tiny_family: bench.InfiniteTalkFamily, monkeypatch: pytest.MonkeyPatch) -> None:
    plan = dataclasses.replace(bench.TINY_PLAN, sizes=())  # no warm-ups, only the guided run
    saved: list[dict[str, Any]] = []
    results = bench.run_all(plan, tiny_family, torch.device("cpu"), -1.0, bench.Progress(), saved.append)
    (record,) = results.values()
    assert record["status"] == "skipped" and "time budget" in record["reason"]

    monkeypatch.setattr(psutil, "virtual_memory", lambda: type("Memory", (), {"available": bench.HOST_RESERVE})())
    assert bench.host_memory_problem(tiny_family, "resident") is None
    assert bench.host_memory_problem(tiny_family, "offloaded").startswith("host memory")


def test_pinned_memory_estimate_follows_the_host_allocator(tiny_family: bench.InfiniteTalkFamily) -> None:
    weights = sum(m.size_bytes for m in tiny_family.modules.values())
    need = {name: bench.pinned_bytes_needed(tiny_family, config) for name, config in bench.RESIDENCIES.items()}
    assert need["resident"] == 0
    assert weights <= need["offloaded"] < 2 * weights  # each module rounded up to a power of two
    assert 0 < need["text_encoder_offloaded"] < need["offloaded"] and 0 < need["dit_streamed_2"] < need["offloaded"]


def test_real_networks_build_on_meta_with_the_real_counts() -> None:
    rss = psutil.Process().memory_info().rss
    networks = bench.build_networks(bench.real_sizes(), torch.device("meta"), torch.bfloat16)
    assert psutil.Process().memory_info().rss - rss < 2**30  # 25 B parameters would be 50 GB
    expected = real_weight_counts()
    assert bench.parameter_counts(networks) == {
        "dit": expected.dit,
        "vae": expected.vae,
        "audio_encoder": expected.audio_encoder,
        "text_encoder": expected.text_encoder,
        "image_encoder": expected.image_encoder,
    }
    family = InfiniteTalkFamily.from_networks(networks, "meta")
    assert all(p.device.type == "meta" for m in family.modules.values() for p in m.network.parameters())


def test_built_networks_keep_buffers_ties_and_dtypes(tiny_family: bench.InfiniteTalkFamily) -> None:
    networks = tiny_family.networks
    fresh = InfiniteTalkDiT(bench.TINY.dit, bench.TINY.adapter)  # built normally: its rotary tables as __init__ computes them
    assert torch.equal(networks.dit.rope.freqs_cos, fresh.rope.freqs_cos) and torch.equal(networks.dit.rope.freqs_sin, fresh.rope.freqs_sin)
    clip = networks.image_encoder.network.embeddings  # transformers 5: no vision_model. level
    assert torch.equal(clip.position_ids, torch.arange(clip.num_positions)[None])
    t5 = networks.text_encoder.network
    assert t5.shared.weight is t5.encoder.embed_tokens.weight
    dtypes = {key: p.dtype for key, p in networks.dit.named_parameters()}
    assert all((dtype == torch.float32) == bench.dit_keeps_fp32(key) for key, dtype in dtypes.items())
    assert dtypes["audio_proj.norm.weight"] == torch.float32 and dtypes["scale_shift_table"] == torch.float32  # as the loader keeps them
    assert device_and_dtype(tiny_family.modules["dit"])[1] == torch.bfloat16  # the stages still see a bf16 DiT
    assert torch.all(networks.dit.blocks[0].norm_x.weight == 1) and torch.all(networks.dit.blocks[0].attn1.to_q.bias == 0)


def test_random_dit_output_is_finite(tiny_family: bench.InfiniteTalkFamily) -> None:
    config, audio = bench.TINY.dit, bench.TINY.adapter
    g = torch.Generator().manual_seed(0)
    frames, dtype = 3, bench.DTYPE
    with torch.inference_mode():
        out = tiny_family.networks.dit(
            torch.randn(1, config.out_dim, frames, 4, 6, generator=g).to(dtype),
            torch.randn(1, config.in_dim - config.out_dim, frames, 4, 6, generator=g).to(dtype),
            torch.tensor([900.0]),
            torch.randn(1, 7, config.text_dim, generator=g).to(dtype),
            torch.randn(1, 257, config.clip_dim, generator=g).to(dtype),
            torch.randn(1, 1 + 4 * (frames - 1), 5, audio.blocks, audio.channels, generator=g).to(dtype),
        )
    assert torch.isfinite(out).all() and out.abs().max() > 0


@pytest.mark.skipif(torch.cuda.is_available(), reason="with a GPU this would start the real benchmark")
def test_cuda_without_a_gpu_is_a_clear_error(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "avatarstream.families.infinitetalk.gpu_bench", "--out", str(tmp_path)], check=False, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 2 and "no CUDA GPU is available" in done.stderr
