"""LiveAvatar's KV-cache and weight memory from its config, and the page that shows it (docs/models/liveavatar.md)."""

from __future__ import annotations

from pathlib import Path

from avatarstream.families.liveavatar.memory import GB, kv_bytes, markdown, real_weight_counts
from avatarstream.models.liveavatar.config import S2VConfig

DOC = Path(__file__).parents[2] / "docs" / "models" / "liveavatar.md"


def test_the_step_caches_at_704x384_in_bf16_are_about_41_gb_and_scale_with_tokens() -> None:
    config = S2VConfig.real()
    steps, sink = kv_bytes(config, (704, 384), 2)
    assert 41e9 < steps < 42e9  # 4 caches x 12 latent frames x 1056 tokens x 40 layers x (k, v) x 5120 x 2 bytes
    assert sink == (1056 + 1056 + 264 + 264) * 2 * 40 * 5120 * 2  # reference frame + FramePack motion tokens
    assert kv_bytes(config, (704, 384), 4)[0] == 2 * steps
    assert kv_bytes(config, (704, 384), 2, cache_blocks=2)[0] == steps // 2


def test_the_page_shows_what_the_config_gives() -> None:
    counts = real_weight_counts()
    assert 15e9 < counts.dit < 17e9  # the "14B" S2V DiT with its audio and motion modules
    table = markdown(S2VConfig.real(), counts)
    page = DOC.read_text()
    missing = [line for line in table.splitlines() if line.startswith("|") and line not in page]
    assert not missing, f"docs/models/liveavatar.md is out of date: {missing[:2]}"
    assert f"{kv_bytes(S2VConfig.real(), (704, 384), 2)[0] / GB:.1f} GB" in page
