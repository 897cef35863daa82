"""Two minutes of liveavatar: the exact frame count, and host memory that does not grow (tiny checkpoint, CPU).

Memory is judged within the run: a process's peak RSS moves from one run to the next with the timing of its
allocations (30-s runs of this test peaked between 524 and 606 MiB), which a comparison of two runs' peaks would take
for growth. The ten-minute figures are in docs/models/liveavatar.md.
"""

from __future__ import annotations

from pathlib import Path

from long_render import assert_no_growth, render_report

#: Small and fast: 64x64, two steps, the default rolling cache, a 1 s audio window.
FAST = ["--size", "64x64", "--steps", "2", "--audio-window", "1", "--audio-lookahead", "4", "--preset", "ultrafast"]


def test_two_minutes_hold_their_memory(tiny_liveavatar: Path, tmp_path: Path) -> None:
    long = render_report("liveavatar", tiny_liveavatar, tmp_path, 120, FAST)
    assert long["frames"] == 3000 and long["peak_device_bytes"] is None  # exactly 120 s at 25 fps; no device allocator on the CPU
    assert_no_growth(long)
