"""FlashVSR's session memory as computed (``families/flashvsr/memory.py``, the figures of docs/models/flashvsr.md) equals
what a stream holds (the tiny golden checkpoint, 32x32 in, 128x128 out), its KV cache held as computed, in bf16 or in fp8."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from avatarstream.components import kv_storage
from avatarstream.families.flashvsr.layout import resolve
from avatarstream.families.flashvsr.memory import session_bytes
from avatarstream.families.flashvsr.networks import FlashVSRNetworks
from avatarstream.models.flashvsr.stream import FlashVSRStream

GOLDEN = Path(__file__).parents[1] / "fixtures" / "flashvsr-tiny"
STORAGE = {None: None, "bf16": torch.bfloat16, "fp8": kv_storage.FP8}


@pytest.mark.parametrize("kv_cache_dtype", list(STORAGE))
def test_the_computed_kv_cache_and_prompt_keys_are_what_a_stream_holds(kv_cache_dtype: str | None) -> None:
    networks = FlashVSRNetworks.load(resolve(GOLDEN / "weights" / "FlashVSR"))
    noise = lambda first, count: torch.zeros(1, 16, count, 16, 16)
    stream = FlashVSRStream(networks, noise=noise, kv_ratio=2, device=torch.device("cpu"), dtype=torch.float32, kv_storage=STORAGE[kv_cache_dtype])
    stream.push(torch.zeros(49, 32, 32, 3, dtype=torch.uint8))  # three calls: the cache is full (two slabs kept)
    computed = session_bytes(32, 32, networks.dit.config, kv_ratio=2, element_size=4, kv_cache_dtype=kv_cache_dtype)
    assert stream.cache.nbytes() == computed.kv_cache > 0
    assert sum(k.numel() * 4 + v.numel() * 4 for k, v in stream.cross) == computed.cross_kv
    assert sum(f.numel() for f in stream.frames) <= computed.held_frames
    held = {t.dtype for t in (*stream.cache.keys, *stream.cache.values) if t is not None}
    assert held == {STORAGE[kv_cache_dtype] or torch.float32}
