"""Two minutes of flashhead (Pro, tiny checkpoint, CPU) peak in host memory where 30 seconds do, with exact frame counts.

Every chunk re-encodes the whole 8 s audio buffer and keeps only the motion latents and the generator, so nothing a
session holds grows with its length.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from long_render import assert_no_growth, render_report

from avatarstream.families.flashhead.tiny import write_tiny_checkpoint

#: The preset's chunks and audio buffer at a tiny size.
FAST = ["--size", "64x64", "--x264-preset", "ultrafast"]


@pytest.mark.slow
def test_two_minutes_peak_like_thirty_seconds(tmp_path: Path) -> None:
    weights = write_tiny_checkpoint(tmp_path / "weights", seed=5, variant="pro")
    short = render_report("flashhead", weights, tmp_path, 30, FAST)
    long = render_report("flashhead", weights, tmp_path, 120, FAST)
    assert short["frames"] == 750 and long["frames"] == 3000  # exactly 30 s and 120 s at 25 fps
    ratio = long["peak_rss_bytes"] / short["peak_rss_bytes"]
    print(f"\npeak RSS: 30 s {short['peak_rss_bytes'] / 2**20:.1f} MiB, 120 s {long['peak_rss_bytes'] / 2**20:.1f} MiB ({100 * (ratio - 1):+.2f} %)")
    assert ratio < 1.02, f"peak RSS grew {100 * (ratio - 1):.1f}% for 4x the audio"
    assert_no_growth(long)
