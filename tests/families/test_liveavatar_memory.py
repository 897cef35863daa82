"""LiveAvatar's KV-cache and weight memory from its config, and the page that shows it (docs/models/liveavatar.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from avatarstream.families.liveavatar.memory import kv_bytes, markdown, real_weight_counts, sink_peak, sizing
from avatarstream.models.liveavatar.config import S2VConfig
from avatarstream.weights.sizing import GIB

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
    assert table in page, "docs/models/liveavatar.md section 4 is out of date: paste python -m avatarstream.families.liveavatar.memory"
    caches, sink = (n / GIB for n in kv_bytes(S2VConfig.real(), (704, 384), 2))
    said = {  # the figures sections 2 and 3 quote, at 704x384 in bf16
        "one step's cache instead of all four": f"{caches / 4:.1f} GiB instead of {caches:.1f} GiB",
        "sp=2's caches and sink": f"holds {caches / 2:.1f} GiB of step caches and a {sink / 2:.2f} GiB sink instead of {caches:.1f} GiB and {sink:.2f} GiB",
        "steps=4,sp=2's cache": f"one step's cache for its heads, {caches / 8:.1f} GiB",
        "the whole sink at its prefill": f"{sink:.2f} GiB for a moment",
        "the caches a resumed session starts without": f"the step caches ({caches:.1f} GiB at 704x384)",
        "a block's latents": f"about {16 * 3 * (384 // 8) * (704 // 8) * 2 / 2**20:.1f} MiB at 704x384",
    }
    missing = [what for what, text in said.items() if text not in page]
    assert not missing, f"docs/models/liveavatar.md quotes other figures for: {missing}"


def test_a_rank_holds_its_steps_and_heads_of_the_caches_and_the_sink_twice_at_its_refresh() -> None:
    config, counts = S2VConfig.real(), real_weight_counts()
    caches, sink = (n / GIB for n in kv_bytes(config, (704, 384), 2))
    assert sink_peak(sink, 1) == sink_peak(sink, 2) == 2 * sink  # old + new whole; old half + new whole + its half
    options = {(o.parallel, o.residency): o for o in sizing(config, counts, (704, 384)).options}
    cached = {parallel: sum(gib for _, gib in options[(parallel, "default=resident")].caches) for parallel in ("", "sp=2", "steps=4", "steps=4,sp=2")}
    assert cached == pytest.approx(
        {"": caches + 2 * sink, "sp=2": caches / 2 + 2 * sink, "steps=4": caches / 4 + 2 * sink, "steps=4,sp=2": caches / 8 + 2 * sink}
    )
    resident, offloaded = options[("", "default=resident")], options[("", "text_encoder=offloaded")]
    assert resident.need_gib - offloaded.need_gib == pytest.approx(counts.text_encoder * 2 / GIB)  # umT5 visits before any cache
    assert offloaded.at_start_gib < offloaded.in_loop_gib
