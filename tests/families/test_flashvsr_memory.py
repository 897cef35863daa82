"""FlashVSR's session memory as computed (``families/flashvsr/memory.py``, the figures of docs/models/flashvsr.md) equals
what a stream holds (the tiny golden checkpoint, 32x32 in, 128x128 out)."""

from __future__ import annotations

from pathlib import Path

import torch

from avatarstream.families.flashvsr.layout import resolve
from avatarstream.families.flashvsr.memory import session_bytes
from avatarstream.families.flashvsr.networks import FlashVSRNetworks
from avatarstream.models.flashvsr.stream import FlashVSRStream

GOLDEN = Path(__file__).parents[1] / "fixtures" / "flashvsr-tiny"


def test_the_computed_kv_cache_and_prompt_keys_are_what_a_stream_holds() -> None:
    networks = FlashVSRNetworks.load(resolve(GOLDEN / "weights" / "FlashVSR"))
    noise = lambda first, count: torch.zeros(1, 16, count, 16, 16)
    stream = FlashVSRStream(networks, noise=noise, kv_ratio=2, device=torch.device("cpu"), dtype=torch.float32)
    stream.push(torch.zeros(49, 32, 32, 3, dtype=torch.uint8))  # three calls: the cache is full (two slabs kept)
    computed = session_bytes(32, 32, networks.dit.config, kv_ratio=2, element_size=4)
    assert stream.cache.nbytes() == computed.kv_cache > 0
    assert sum(k.numel() * 4 + v.numel() * 4 for k, v in stream.cross) == computed.cross_kv
    assert sum(f.numel() for f in stream.frames) <= computed.held_frames
