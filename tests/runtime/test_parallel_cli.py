"""``avatarstream render --nproc 2 --parallel ...`` end to end: the same video as one process, and a failing rank stops every rank.

Faults are injected by ``faults/sitecustomize.py`` (on the workers' PYTHONPATH only for these runs).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from publish.mp4_checks import decode
from sources.sine_files import write_sine

FAULTS = Path(__file__).parent / "faults"
SECONDS = 4.0


@pytest.fixture(scope="module")
def speech(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("parallel-cli") / "speech.wav"
    write_sine(path, "pcm_s16le", 16000, 1, SECONDS)
    return path


def render(speech: Path, out: Path, *options: str, fail: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("LOCAL_RANK", "RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")}
    if fail is not None:
        env["AVATARSTREAM_TEST_FAIL"] = fail
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(FAULTS), env.get("PYTHONPATH")]))
    command = [sys.executable, "-m", "avatarstream.cli.main", "render", "--model", "demo-tiny", "--audio", str(speech), "--out", str(out),
               "--threads", "1", "--no-progress", *options]  # fmt: skip
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=300, check=False)


def test_two_processes_render_the_video_of_one(speech: Path, tmp_path: Path) -> None:
    alone = render(speech, tmp_path / "one.mp4")
    assert alone.returncode == 0, alone.stderr[-2000:]
    split = render(speech, tmp_path / "two.mp4", "--nproc", "2", "--parallel", "sp=2")
    assert split.returncode == 0, split.stderr[-2000:]
    one, two = decode(tmp_path / "one.mp4"), decode(tmp_path / "two.mp4")
    assert len(two.frames) == len(one.frames) == round(SECONDS * 25)
    np.testing.assert_array_equal(np.stack(two.frames), np.stack(one.frames))
    assert split.stdout.count("done ->") == 1  # rank 0 reports, the others do not


@pytest.mark.parametrize(
    ("fail", "layout", "message"),
    [
        ("1:a2v:10", "sp=2", "error: the session stopped: rank 1: RuntimeError: injected fault in a2v on rank 1"),
        ("1:decode:3", "decode", "error: the session stopped: rank 1: RuntimeError: injected fault in decode on rank 1"),
        ("0:a2v:10", "sp=2", "RuntimeError: injected fault in a2v on rank 0"),
    ],
    ids=["sp-follower", "decode-rank", "rank-0"],
)
def test_a_failing_rank_stops_every_rank_and_the_file_plays(speech: Path, tmp_path: Path, fail: str, layout: str, message: str) -> None:
    out = tmp_path / "out.mp4"
    done = render(speech, out, "--nproc", "2", "--parallel", layout, fail=fail)
    assert done.returncode == 1, done.stderr[-2000:]
    assert message in done.stderr
    if not fail.startswith("0:"):  # a follower's failure is one line from rank 0, no trace from anyone
        assert [line for line in done.stderr.splitlines() if "error" in line.lower()] == [message + line_tail(done.stderr, message)]
        assert "Traceback" not in done.stderr
    video = decode(out)  # finalized: it opens and decodes
    assert 0 < len(video.frames) < round(SECONDS * 25)


@pytest.mark.parametrize(
    ("layout", "message"),
    [
        ("cfg=2", "error: --parallel cfg=2: this model makes one prediction per step (no guidance), so there is nothing to split; use sp"),
        ("steps=2", "error: --parallel steps=2: this model's denoising steps share their state, so they cannot run on ranks of their own; use sp or cfg"),
    ],
)
def test_a_layout_the_model_cannot_split_is_one_clear_error(speech: Path, tmp_path: Path, layout: str, message: str) -> None:
    done = render(speech, tmp_path / "out.mp4", "--nproc", "2", "--parallel", layout)
    assert done.returncode == 2
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert errors == [message]
    assert "Traceback" not in done.stderr and not (tmp_path / "out.mp4").exists()


def line_tail(text: str, start: str) -> str:
    """The rest of the line that begins with ``start`` (the location the failing rank adds)."""
    line = next(line for line in text.splitlines() if line.startswith(start))
    return line[len(start) :]
