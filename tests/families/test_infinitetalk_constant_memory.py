"""A 10-minute infinitetalk render peaks in host memory where a 30-second one does (tiny checkpoint, CPU)."""

from __future__ import annotations

from pathlib import Path

from long_render import assert_no_growth, render_report

from avatarstream.families.infinitetalk.layout import WeightsLayout

#: Small and fast: 16x16 frames, one step, 81-frame chunks, latent hand-over, a 1 s audio window.
FAST = ["--model-preset", "flashtalk", "--size", "16x16", "--steps", "1", "--chunk-frames", "81", "--motion-frames", "5",
        "--motion", "latent", "--audio-window", "1", "--audio-lookahead", "2"]  # fmt: skip


def test_ten_minutes_peak_like_thirty_seconds(tiny_original: WeightsLayout, tmp_path: Path) -> None:
    short = render_report("infinitetalk", tiny_original.base.parent, tmp_path, 30, FAST)
    long = render_report("infinitetalk", tiny_original.base.parent, tmp_path, 600, FAST)
    assert short["frames"] == 750 and long["frames"] == 15000
    ratio = long["peak_rss_bytes"] / short["peak_rss_bytes"]
    print(f"\npeak RSS: 30 s {short['peak_rss_bytes'] / 2**20:.1f} MiB, 10 min {long['peak_rss_bytes'] / 2**20:.1f} MiB ({100 * (ratio - 1):+.2f} %)")
    assert ratio < 1.02, f"peak RSS grew {100 * (ratio - 1):.1f}% for 20x the audio"
    assert short["peak_device_bytes"] is None and long["peak_device_bytes"] is None  # no device allocator on the CPU
    assert_no_growth(long)
