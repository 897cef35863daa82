"""The real checkpoint's weight memory, computed from its config on the meta device (docs/models/infinitetalk.md)."""

from __future__ import annotations

from avatarstream.families.infinitetalk.memory import GIB, loading_peak_gib, markdown, policy_table, real_weight_counts
from avatarstream.models.infinitetalk.config import InfiniteTalkConfig


def test_counts_add_up_and_match_the_published_sizes() -> None:
    counts = real_weight_counts()
    config = InfiniteTalkConfig.real()
    assert counts.dit_outside_blocks + counts.dit_block * config.dit.num_layers == counts.dit
    assert 16.0e9 < counts.dit_base < 16.6e9  # "14B" I2V: 16.4 B with the image cross-attention
    assert 5.6e9 < counts.text_encoder < 5.8e9  # the UMT5-XXL encoder: 11.4 GB in bf16 on disk
    assert 0.6e9 < counts.image_encoder < 0.65e9  # ViT-H/14's vision tower


def test_policies_order_by_device_memory() -> None:
    rows = {name: device for name, device, _ in policy_table(real_weight_counts(), 2)}
    resident = rows["resident (everything on the device)"]
    assert rows["DiT streamed:2, rest offloaded"] < rows["DiT streamed:2, rest resident"] < rows["offloaded (everything)"] < resident
    assert rows["DiT sharded over 8 GPUs, rest resident"] < resident


def test_loading_needs_the_model_plus_one_shard() -> None:
    counts = real_weight_counts()
    assert counts.dit * 2 / GIB < loading_peak_gib(counts, 2) < counts.dit * 2 / GIB + 10
    assert "GiB" in markdown(counts)
