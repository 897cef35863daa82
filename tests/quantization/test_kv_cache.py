"""LiveAvatar's fp8 KV caches and sink: what they hold and cost, that the default stores what the model computes, and that
the memory model counts what a session allocates."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from avatarstream.components import kv_storage
from avatarstream.families.assemble import build_pipeline
from avatarstream.families.liveavatar.memory import kv_bytes
from avatarstream.families.registry import load_family
from avatarstream.models.liveavatar.caches import StepCache
from avatarstream.models.liveavatar.config import S2VConfig
from avatarstream.sources.pcm import PcmBlock
from avatarstream.stages.liveavatar.generate import BlockState, LiveAvatarBlockStage
from runtime.helpers import speech


def test_fp8_keeps_each_head_within_e4m3s_rounding_and_zero_at_zero() -> None:
    torch.manual_seed(0)
    cache = StepCache.empty(2, 1, 8, 3, 16, torch.float32, torch.device("cpu"), kv_storage.FP8)
    k = torch.randn(1, 4, 3, 16) * torch.tensor([1e-3, 1.0, 300.0]).view(1, 1, 3, 1)  # heads of very different magnitudes
    keys, values = cache.write(1, k, k * 2)
    assert keys.dtype == torch.float32 and keys.shape == (1, 4, 3, 16)
    relative = (keys - k).abs() / k.abs().amax(dim=-1, keepdim=True)
    assert relative.max() <= 2**-4  # e4m3 keeps 3 mantissa bits: half a step is 1/16 of a value, the head's scale fits its largest
    torch.testing.assert_close(values, 2 * keys)
    assert cache.k.dtype == kv_storage.FP8 and cache.k_scale is not None and cache.k_scale.shape == (2, 1, 8, 3, 1)
    assert torch.count_nonzero(cache.k[0].float()) == 0  # a layer never written reads zero
    assert cache.nbytes() == 2 * (2 * 8 * 3 * 16 + 2 * 8 * 3 * 4)  # 1 byte a value and a float32 scale per token and head, k and v


def test_the_default_stores_what_the_model_computes_and_reads_it_back_without_a_copy() -> None:
    cache = StepCache.empty(1, 1, 4, 2, 8, torch.float32, torch.device("cpu"))
    assert cache.k_scale is None and cache.k.dtype == torch.float32
    k = torch.randn(1, 2, 2, 8)
    keys, _ = cache.write(0, k, k)
    assert keys.data_ptr() == cache.k.data_ptr() and torch.equal(keys, k)  # a view of the cache, as before fp8 existed


def test_the_memory_model_counts_fp8_bytes_per_value_and_scales() -> None:
    config = S2VConfig.real()
    bf16_steps, bf16_sink = kv_bytes(config, (704, 384), 2)
    fp8_steps, fp8_sink = kv_bytes(config, (704, 384), 1, scaled=True)
    assert fp8_steps / bf16_steps == pytest.approx((1 + 4 / config.head_dim) / 2)  # 0.516 at head_dim 128
    assert fp8_sink / bf16_sink == pytest.approx((1 + 4 / config.head_dim) / 2)


@pytest.mark.parametrize("storage", [None, "bf16", "fp8"])
def test_a_sessions_caches_weigh_what_the_memory_model_says(storage: str | None, tiny_liveavatar: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    states: list[BlockState] = []
    start = LiveAvatarBlockStage._start
    monkeypatch.setattr(LiveAvatarBlockStage, "_start", lambda self, *args: states.append(start(self, *args)) or states[-1])
    family = load_family("liveavatar", tiny_liveavatar)
    options = {"size": (64, 64), "steps": 2, "cache_blocks": 2, **({"kv_cache_dtype": storage} if storage else {})}
    pipeline = build_pipeline(family, torch.device("cpu"), options)
    frames = [c.frames for c in pipeline.stream([PcmBlock(speech(1.0), 16000)], family.reference(None, options), seed=1)]
    assert sum(len(f) for f in frames) > 0
    (state,) = states
    config = family.networks.dit.config
    size, bytes_per_value = (64, 64), {None: 4, "bf16": 2, "fp8": 1}[storage]
    steps, sink = kv_bytes(config, size, bytes_per_value, steps=2, cache_blocks=2, scaled=storage == "fp8")
    assert state.nbytes() == steps + sink
    assert np.isfinite(np.concatenate(frames)).all()
