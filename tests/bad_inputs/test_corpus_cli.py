"""The corpus's CLI and Python-API rows: one ``error: ...`` line (exit code 2), nothing created, nothing left running or open."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import av
import pytest
from corpus import API, CLI, Case
from leaks import Snapshot, listing

from avatarstream import render
from avatarstream.cli.main import main
from avatarstream.errors import InputError


@pytest.fixture(scope="module", autouse=True)
def warmed(tmp_path_factory: pytest.TempPathFactory) -> None:
    """One good render first, so descriptors and threads a first render opens for good (libraries, pools) are not counted."""
    import makers

    tmp = tmp_path_factory.mktemp("warm")
    render(makers.good_wav(tmp), out=tmp / "o.mp4", model="demo-tiny")


def _run_cli(argv: list[str]) -> int:
    try:
        return main(argv)
    except SystemExit as exit_:  # argparse's usage errors
        return int(exit_.code or 0)


def _messages(err: str) -> list[str]:
    """stderr without the input warnings a demo-tiny run prints on purpose (random weights, a photo on procedural weights,
    audio below the model's rate) and parity's progress lines; an output that lost packets still counts."""
    quiet = lambda line: (line.startswith("warning: ") and not line.startswith("warning: output ")) or line.startswith("running case ")
    return [line for line in err.splitlines() if line.strip() and not quiet(line)]


def _frames(path: Path) -> int:
    with av.open(str(path)) as container:
        return sum(1 for _ in container.decode(video=0))


@pytest.mark.parametrize("case", CLI, ids=[c.id for c in CLI])
def test_cli_row(case: Case, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = case.make(tmp_path)
    made = listing(tmp_path)
    capsys.readouterr()
    before = Snapshot()
    start = time.monotonic()
    code = _run_cli(argv)
    elapsed = time.monotonic() - start
    err = capsys.readouterr().err
    assert "Traceback" not in err
    if case.accepted:
        assert code == 0 and _messages(err) == [], err
        assert _frames(Path(argv[argv.index("--out") + 1])) > 0
    else:
        lines = _messages(err)
        assert code == case.expect, err
        assert len(lines) == 1 and lines[0].startswith("error: "), err
        for words in case.words:
            assert words in lines[0], lines[0]
        assert listing(tmp_path) == made, "a refused command created or removed files"
    assert elapsed < 60, f"took {elapsed:.1f} s"  # catches a hang, or work sized by a claimed length (a "10 h" header)
    before.assert_settled()


@pytest.mark.parametrize("case", API, ids=[c.id for c in API])
def test_api_row(case: Case, tmp_path: Path) -> None:
    kwargs = {"model": "demo-tiny", "out": tmp_path / "o.mp4", **case.make(tmp_path)}
    made = listing(tmp_path)
    before = Snapshot()
    with pytest.raises(InputError) as raised:
        render(**kwargs)
    assert raised.value.exit_code == case.expect
    message = str(raised.value)
    assert "\n" not in message
    for words in case.words:
        assert words in message
    created = listing(tmp_path) - made
    if isinstance(kwargs["audio"], list):  # a live source is checked as it arrives: its output is started, and finalized
        assert created <= {"o.mp4"}
    else:
        assert created == set(), "a refused render created files"
    before.assert_settled()


def test_a_real_process_prints_one_line_and_exits_2(tmp_path: Path) -> None:
    row = next(c for c in CLI if c.id == "audio-rate-1hz")
    exe = Path(sys.executable).with_name("avatarstream")
    result = subprocess.run([str(exe), *row.make(tmp_path)], check=False, capture_output=True, text=True, timeout=120)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: audio ") and all(w in lines[0] for w in row.words), result.stderr
    assert not (tmp_path / "o.mp4").exists()


def test_the_corpus_has_sixty_errors() -> None:
    from corpus import ROWS

    errors = [c for c in ROWS if not c.accepted]
    assert len(errors) >= 60 and len({c.id for c in ROWS}) == len(ROWS)
    assert {c.surface for c in errors} == {"cli", "api", "http", "ws"}


def test_eight_channels_are_downmixed_to_their_mean(tmp_path: Path) -> None:
    import makers
    import numpy as np

    from avatarstream.sources.audio_file import open_audio_file

    samples = np.stack([np.full(1600, c / 10, np.float32) for c in range(8)], axis=1)  # channel c holds c/10
    path = makers.write(tmp_path, "eight.wav", makers.wav_bytes(samples, float32=True))
    with open_audio_file(path) as source:
        decoded = np.concatenate([b.samples for b in source], axis=1)
        assert source.channels == 1
    np.testing.assert_allclose(decoded, 0.35, atol=1e-6)
