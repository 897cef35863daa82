"""Two minutes of liveavatar peak in host memory where 30 seconds do, with the exact frame count (tiny checkpoint, CPU).

Before the CPU runtime sent the VAE's video convolutions to oneDNN (``runtime/cpu_convolution``), two runs of one command
peaked up to 17 % apart: glibc kept the im2col buffers of torch's fallback kernel as free heap, laid out differently each
run. The ten-minute figures are in docs/models/liveavatar.md.
"""

from __future__ import annotations

from pathlib import Path

from long_render import assert_no_growth, render_report

#: Small and fast: 64x64, two steps, the default rolling cache, a 1 s audio window.
FAST = ["--size", "64x64", "--steps", "2", "--audio-window", "1", "--audio-lookahead", "4", "--x264-preset", "ultrafast"]


def test_two_minutes_peak_like_thirty_seconds(tiny_liveavatar: Path, tmp_path: Path) -> None:
    short = render_report("liveavatar", tiny_liveavatar, tmp_path, 30, FAST)
    long = render_report("liveavatar", tiny_liveavatar, tmp_path, 120, FAST)
    assert short["frames"] == 750 and long["frames"] == 3000  # exactly 30 s and 120 s at 25 fps
    ratio = long["peak_rss_bytes"] / short["peak_rss_bytes"]
    print(f"\npeak RSS: 30 s {short['peak_rss_bytes'] / 2**20:.1f} MiB, 120 s {long['peak_rss_bytes'] / 2**20:.1f} MiB ({100 * (ratio - 1):+.2f} %)")
    assert ratio < 1.02, f"peak RSS grew {100 * (ratio - 1):.1f}% for 4x the audio"
    assert long["peak_device_bytes"] is None  # no device allocator on the CPU
    assert_no_growth(long)
