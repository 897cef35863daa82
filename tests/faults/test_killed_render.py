"""``render --fragmented`` killed with SIGKILL half-way (no handler runs, nothing is finalized): the file plays up to the
last fragment it finished, and fragments end on keyframes, so what is lost is at most the fragment being written."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import av
import numpy as np

from sources.sine_files import write_sine

FPS = 25  # demo-tiny's; its keyframe interval is 1 s, so a fragment holds 25 frames


def test_a_killed_fragmented_render_plays_up_to_its_last_fragment(tmp_path: Path) -> None:
    audio, out = tmp_path / "long.wav", tmp_path / "talk.mp4"
    write_sine(audio, "pcm_s16le", 16000, 1, 600.0)  # far longer than the test lets it run
    argv = ["render", "--model", "demo-tiny", "--threads", "1", "--no-progress", "--audio", str(audio), "--out", str(out), "--fragmented"]
    render = subprocess.Popen([sys.executable, "-m", "avatarstream.cli.main", *argv], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120
        while not out.exists() or out.stat().st_size < 300_000:  # several fragments in
            assert render.poll() is None, render.stderr.read().decode() if render.stderr else ""
            assert time.monotonic() < deadline, "the render wrote too little"
            time.sleep(0.05)
        render.send_signal(signal.SIGKILL)
        assert render.wait(30) == -signal.SIGKILL
    finally:
        if render.poll() is None:
            render.kill()
    with av.open(str(out)) as container:
        frames = [frame.pts for frame in container.decode(video=0)]
    assert len(frames) >= 2 * FPS, f"only {len(frames)} frames play"
    assert len(frames) % FPS == 0, f"{len(frames)} frames: the file should end on a whole fragment"
    assert np.all(np.diff(frames) > 0)  # in order, none missing in between
