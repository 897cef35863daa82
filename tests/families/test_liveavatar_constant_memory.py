"""Two minutes of liveavatar peak in host memory where thirty seconds do, with the exact frame counts (tiny checkpoint, CPU).

The ten-minute figure is in docs/models/liveavatar.md; two minutes (250 blocks, the rolling caches and the audio
window wrapped many times) keep the suite's time.
"""

from __future__ import annotations

from pathlib import Path

from long_render import assert_flat, render_report

#: Small and fast: 64x64, two steps, the default rolling cache, a 1 s audio window.
FAST = ["--size", "64x64", "--steps", "2", "--audio-window", "1", "--audio-lookahead", "4", "--preset", "ultrafast"]


def test_two_minutes_peak_like_thirty_seconds(tiny_liveavatar: Path, tmp_path: Path) -> None:
    short = render_report("liveavatar", tiny_liveavatar, tmp_path, 30, FAST)
    long = render_report("liveavatar", tiny_liveavatar, tmp_path, 120, FAST)
    assert short["frames"] == 750 and long["frames"] == 3000
    assert_flat(short, long)
