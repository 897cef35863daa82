"""A parallel strategy from an installed package: the test family's ``frames=N`` runs under ``--nproc 2`` over gloo.

Nothing in runtime/ or pipeline/ names it: the ``avatarstream.parallel`` entry point registers it, the family declares
what it splits in its spec, and the framework hands that part its process group. Each rank paints half of every block
(the plug-in logs what it painted), and the video is the one process makes.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from avatarstream.errors import InputError
from avatarstream.runtime.parallel.layout import parse_parallel
from publish.mp4_checks import decode
from sources.sine_files import write_sine

SECONDS = 2.0
LOG = "AVATARSTREAM_COLOURBARS_PAINT_LOG"  # the plug-in appends "rank frames" per block it paints


def render(speech: Path, out: Path, log: Path, *options: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("LOCAL_RANK", "RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")}
    env[LOG] = str(log)
    command = [sys.executable, "-m", "avatarstream.cli.main", "render", "--model", "colourbars", "--audio", str(speech), "--out", str(out),
               "--threads", "1", "--no-progress", "--report", str(out.with_suffix(".json")), *options]  # fmt: skip
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=300, check=False)


def test_a_plugin_strategy_splits_the_frames_over_two_ranks(tmp_path: Path) -> None:
    speech = tmp_path / "speech.wav"
    write_sine(speech, "pcm_s16le", 16000, 1, SECONDS)
    alone = render(speech, tmp_path / "one.mp4", tmp_path / "one.log")
    assert alone.returncode == 0, alone.stderr[-2000:]
    split = render(speech, tmp_path / "two.mp4", tmp_path / "two.log", "--nproc", "2", "--parallel", "frames=2")
    assert split.returncode == 0, split.stderr[-2000:]
    one, two = decode(tmp_path / "one.mp4"), decode(tmp_path / "two.mp4")
    assert len(two.frames) == len(one.frames) == round(SECONDS * 25)
    np.testing.assert_array_equal(np.stack(two.frames), np.stack(one.frames))
    blocks = Counter(line.split()[1] for line in (tmp_path / "one.log").read_text().splitlines())
    painted = Counter(tuple(line.split()) for line in (tmp_path / "two.log").read_text().splitlines())
    assert blocks == {"12": sum(blocks.values())}, "one process paints each 12-frame block whole"
    assert painted == {("0", "6"): blocks["12"], ("1", "6"): blocks["12"]}, "each rank painted half of every block"
    assert '"parallel": "sp=1,cfg=1,frames=2"' in (tmp_path / "two.json").read_text()


def test_an_unknown_strategy_names_the_installed_ones() -> None:
    with pytest.raises(InputError, match=r"unknown part 'rows=2'; use sp=S, cfg=C, steps=N and decode, .*; installed strategies: frames=N$"):
        parse_parallel("rows=2", 2)


def test_a_model_that_declares_nothing_for_a_strategy_is_told_so(tmp_path: Path) -> None:
    speech = tmp_path / "speech.wav"
    write_sine(speech, "pcm_s16le", 16000, 1, 0.5)
    done = subprocess.run(
        [sys.executable, "-m", "avatarstream.cli.main", "render", "--model", "demo-tiny", "--audio", str(speech), "--out", str(tmp_path / "x.mp4"),
         "--threads", "1", "--no-progress", "--nproc", "2", "--parallel", "frames=2"],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode != 0
    assert "--parallel frames=2: this model declares nothing that frames=2 splits; leave it out of --parallel" in done.stderr
