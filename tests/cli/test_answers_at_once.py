"""The command line answers at once: `--help`, every subcommand's `--help` and bad input cost about what starting Python costs.

Times are compared with `python -c pass` on the same machine in the same test (medians of a few runs), never with a
wall-clock bound: loading torch (seconds) is what the ratio catches.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

import pytest

#: Slower than this many times `python -c pass` means something heavy was imported: the command line's own imports
#: (argparse, numpy, PyAV) make it 5-15x, loading torch alone 60-100x.
MAX_RATIO = 40
CASES = {
    "help": ["--help"],
    "render help": ["render", "--help"],
    "render help of a model": ["render", "--model", "infinitetalk", "--help"],
    "serve help": ["serve", "--help"],
    "fleet help": ["fleet", "--help"],
    "bench help": ["bench", "--help"],
    "eval help": ["eval", "--help"],
    "parity help": ["parity", "--help"],
    "argument error": ["render", "--threads", "many"],
    "model option error": ["render", "--chunk-frames", "0"],
    "unknown model": ["render", "--model", "nope"],
    "missing audio": ["render", "--audio", "/nonexistent/speech.wav"],
    "missing reference": ["render", "--reference", "/nonexistent/face.png"],
    "output is a folder": ["render", "--out", "/tmp"],
}


def _seconds(argv: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, capture_output=True, check=False, timeout=120)
    return time.perf_counter() - start


def _medians(argv: list[str], runs: int = 3) -> tuple[float, float]:
    """(the command, `python -c pass`), each the median of ``runs``, run in turns so that both see the same load."""
    pairs = [(_seconds(argv), _seconds([sys.executable, "-c", "pass"])) for _ in range(runs)]
    return statistics.median(p[0] for p in pairs), statistics.median(p[1] for p in pairs)


def test_importing_the_cli_loads_no_model_library() -> None:
    code = "import sys, avatarstream.cli.main as m; m.build_parser('demo'); m.build_parser('infinitetalk'); print(sorted(k for k in ('torch', 'transformers', 'diffusers') if k in sys.modules))"
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120).stdout.strip()
    assert loaded == "[]", f"the CLI imported {loaded} before running anything"


@pytest.mark.parametrize("argv", list(CASES.values()), ids=list(CASES))
def test_help_and_bad_input_answer_as_fast_as_python_starts(argv: list[str]) -> None:
    cli = [str(Path(sys.executable).with_name("avatarstream")), *argv]
    answer = subprocess.run(cli, capture_output=True, text=True, check=False, timeout=120)
    assert answer.returncode in (0, 2) and "Traceback" not in answer.stderr, answer.stderr[-2000:]
    took, baseline = _medians(cli)
    print(f"{' '.join(argv)}: {took:.3f} s, python -c pass {baseline:.3f} s")
    assert took < MAX_RATIO * baseline, f"{took:.2f} s against {baseline:.3f} s for python -c pass"
