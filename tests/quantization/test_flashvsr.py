"""The FlashVSR upscaler's ``--upscale-quantize`` (its DiT and LQ projection by default, the decoder on request only, the
mistakes named with the upscaler's flags) and its DiT's fp8 KV cache (each head within e4m3's rounding, never quantized
twice, the oldest slab dropped with its scales; ``--upscale-kv-cache-dtype`` gives it to every session)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from avatarstream.components import kv_storage
from avatarstream.errors import InputError
from avatarstream.families.assemble import build_pipeline
from avatarstream.families.flashvsr.options import FlashVSROptions
from avatarstream.families.flashvsr.upscaler import FlashVSRUpscaler
from avatarstream.families.registry import Upscale, load_family
from avatarstream.models.flashvsr.dit import KVCache
from avatarstream.models.flashvsr.stream import FlashVSRStream
from avatarstream.runtime.quantize import is_quantized
from avatarstream.sources.pcm import PcmBlock
from runtime.helpers import speech

WEIGHTS = Path(__file__).parents[1] / "fixtures" / "flashvsr-tiny" / "weights" / "FlashVSR"
CPU = torch.device("cpu")


def _load(**options: str) -> FlashVSRUpscaler:
    return FlashVSRUpscaler.load(WEIGHTS, FlashVSROptions(**options), device=CPU)


def _quantized(upscaler: FlashVSRUpscaler) -> set[str]:
    return {name for name, m in upscaler.modules.items() if any(is_quantized(p) for p in m.network.parameters())}


def test_the_dit_and_lq_projection_by_default_and_nothing_unless_asked() -> None:
    assert _quantized(_load()) == set()
    upscaler = _load(quantize="int8")
    assert _quantized(upscaler) == {"flashvsr_dit", "flashvsr_lq_proj"}
    assert upscaler.weights.endswith("(tiny mode); quantized: int8 weights (weight-only): flashvsr_dit, flashvsr_lq_proj")
    assert _quantized(_load(quantize="fp8", quantize_modules="flashvsr_lq_proj")) == {"flashvsr_lq_proj"}


def test_mistakes_name_the_upscalers_flags() -> None:
    with pytest.raises(InputError, match="--upscale-quantize-modules names dit, which this model does not have; its modules are: flashvsr_dit, "):
        _load(quantize="int8", quantize_modules="dit")
    with pytest.raises(InputError, match="--upscale-quantize-modules needs --upscale-quantize int8 or fp8"):
        _load(quantize_modules="flashvsr_dit")
    with pytest.raises(InputError, match="module 'flashvsr_decoder' has no linear layers to quantize"):  # the TCDecoder is convolutions
        _load(quantize="int8", quantize_modules="flashvsr_decoder")


def _windows(slabs: int, per_slab: int, heads: int, head_dim: int) -> torch.Tensor:
    """[windows, 128, heads * head_dim] keys whose heads differ by orders of magnitude."""
    magnitudes = torch.tensor([1e-3, 1.0, 300.0])[:heads].repeat_interleave(head_dim)
    return torch.randn(slabs * per_slab, 128, heads * head_dim) * magnitudes


def test_fp8_holds_each_head_within_e4m3s_rounding_and_drops_the_oldest_slab_with_its_scales() -> None:
    torch.manual_seed(0)
    heads, head_dim, per_slab, kv_slabs = 3, 8, 2, 2
    plain, fp8 = KVCache.empty(1), KVCache.empty(1, kv_storage.FP8)
    for slabs in (3, 1, 1):  # the first call brings 3 slabs, each later one 1; the cache keeps 2
        k = _windows(slabs, per_slab, heads, head_dim)
        plain_k, _ = plain.append(0, k, 2 * k, heads, per_slab, kv_slabs)
        keys, values = fp8.append(0, k, 2 * k, heads, per_slab, kv_slabs)
        assert keys.dtype == torch.float32 and keys.shape == plain_k.shape
        by_head = lambda t: t.unflatten(-1, (heads, head_dim))
        relative = (by_head(keys) - by_head(plain_k)).abs() / by_head(plain_k).abs().amax(dim=-1, keepdim=True)
        assert relative.max() <= 2**-4  # e4m3 keeps 3 mantissa bits; each head's scale fits its largest value
        torch.testing.assert_close(values, 2 * keys)
    held, scale = fp8.keys[0], fp8.scales[0][0]
    assert held is not None and held.dtype == kv_storage.FP8 and held.shape == (kv_slabs * per_slab, 128, heads * head_dim)
    assert scale.shape == (kv_slabs * per_slab, 128, heads, 1)
    again = kv_storage.stored(kv_storage.read(held.unflatten(-1, (heads, head_dim)), scale, torch.float32), kv_storage.FP8)
    assert torch.equal(again[0].view(torch.uint8), held.unflatten(-1, (heads, head_dim)).view(torch.uint8))  # what is held was quantized once
    assert fp8.nbytes() == 2 * kv_slabs * per_slab * 128 * heads * (head_dim + 4)  # 1 byte a value and a float32 scale per token and head, k and v


def test_the_default_holds_what_the_model_computes_as_before() -> None:
    cache, k = KVCache.empty(1), _windows(3, 2, 2, 8)
    keys, _ = cache.append(0, k, k, 2, 2, 2)
    assert torch.equal(keys, k) and cache.scales == {}
    held = cache.keys[0]
    assert held is not None and torch.equal(held, k[2:])  # the call's own keys, the oldest slab dropped
    assert cache.nbytes() == 2 * held.numel() * 4  # in storage of their own: the dropped slab is freed


def test_the_kv_cache_dtype_reaches_every_sessions_stream_and_the_report(monkeypatch: pytest.MonkeyPatch) -> None:
    streams: list[FlashVSRStream] = []
    start = FlashVSRStream.__init__
    monkeypatch.setattr(FlashVSRStream, "__init__", lambda self, *args, **kwargs: streams.append(self) or start(self, *args, **kwargs))
    cascade = Upscale("flashvsr", WEIGHTS, {"kv_cache_dtype": "fp8"}).load(load_family("demo-tiny"), device=CPU)
    pipeline = build_pipeline(cascade, CPU)
    frames = [c.frames for c in pipeline.stream([PcmBlock(speech(1.5), 16000)], cascade.reference(None), seed=1)]
    assert sum(len(f) for f in frames) > 25
    (stream,) = streams
    assert {t.dtype for t in stream.cache.keys if t is not None} == {kv_storage.FP8} and stream.cache.scales
    upscaler = cascade.upscaler
    assert upscaler.build((64, 64), 25, FlashVSROptions(kv_cache_dtype="fp8")).settings["kv_cache_dtype"] == "fp8"
    assert "kv_cache_dtype" not in upscaler.build((64, 64), 25, FlashVSROptions()).settings  # unset, the report's settings are as before
