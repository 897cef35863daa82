#!/usr/bin/env python3
"""int8 and fp8 weights against full precision on the CPU: speed and memory of whole renders, in fresh processes.

    python scripts/quantization_cpu_speed.py --out bench/results/DATE-cpu-quantization --repeats 3

Each run is ``avatarstream render`` in a process of its own (so peak RSS is that render's), the quantizations taking
turns run after run, so that a machine's drift spreads over all of them; the median of the repeats is reported. The
models: ``demo`` (its trained weights, 8.4 MiB) and the tiny random LiveAvatar and InfiniteTalk checkpoints of
``scripts/make_tiny_checkpoint.py``. Weight bytes are what the quantized modules hold (torchao's data and scales).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

from avatarstream.families.registry import load_family
from avatarstream.runtime.quantize import parameter_bytes
from avatarstream.sources.audio_file import open_audio_file
from avatarstream.sources.bundled import DEFAULT_SPEECH

SCRIPTS = Path(__file__).resolve().parent
EXE = str(Path(sys.executable).with_name("avatarstream"))
#: The tiny checkpoints' speech: 3.6 s (a LiveAvatar render of the 13.3 s bundled speech stops at 9.4 s on an audio
#: window error, with or without quantization).
SHORT_SPEECH = SCRIPTS.parent / "tests" / "fixtures" / "liveavatar-tiny" / "cases" / "speech.wav"
#: name -> (model, tiny checkpoint family or None, the render's own options as command-line words, its speech)
MODELS: dict[str, tuple[str, str | None, list[str], Path]] = {
    "demo": ("demo", None, [], DEFAULT_SPEECH),
    "liveavatar-tiny": ("liveavatar", "liveavatar", ["--size", "64x64"], SHORT_SPEECH),
    "infinitetalk-tiny": ("infinitetalk", "infinitetalk", ["--model-preset", "flashtalk", "--size", "64x48"], SHORT_SPEECH),
}
QUANTIZATIONS = {"fp32": [], "int8": ["--quantize", "int8"], "fp8": ["--quantize", "fp8"]}


def cpu_name() -> str:
    lines = Path("/proc/cpuinfo").read_text().splitlines() if Path("/proc/cpuinfo").is_file() else []
    return next((line.split(":", 1)[1].strip() for line in lines if line.startswith("model name")), platform.processor() or "unknown CPU")


def speech_seconds(path: Path) -> float:
    blocks = list(open_audio_file(path))
    return sum(b.samples.shape[-1] for b in blocks) / blocks[0].sample_rate


def weights_of(model: str, root: Path | None, words: list[str]) -> int:
    options = {"quantize": words[1]} if words else {}
    family = load_family(model, root, options)
    return sum(parameter_bytes(m.network) for m in family.modules.values())


def render(model: str, root: Path | None, options: list[str], speech: Path, words: list[str], threads: int, tmp: Path) -> dict[str, Any]:
    report = tmp / "report.json"
    weights = ["--weights", str(root)] if root is not None else []
    command = [EXE, "render", "--model", model, *weights, *options, *words, "--audio", str(speech), "--out", str(tmp / "o.mp4"),
               "--report", str(report), "--threads", str(threads)]  # fmt: skip
    subprocess.run(command, check=True, capture_output=True, text=True, timeout=900)
    found = json.loads(report.read_text())
    return {k: found[k] for k in ("fps_out", "realtime_factor", "ttff_s", "peak_rss_bytes", "frames")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--models", default=",".join(MODELS), help=f"comma-separated, of {', '.join(MODELS)}")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    result: dict[str, Any] = {
        "date": time.strftime("%Y-%m-%d"), "machine": f"{platform.machine()}, {os.cpu_count()} cores, {cpu_name()}",
        "torch": torch.__version__, "threads": args.threads, "repeats": args.repeats, "models": {},
    }  # fmt: skip
    with tempfile.TemporaryDirectory() as scratch:
        tmp = Path(scratch)
        for name in args.models.split(","):
            model, tiny, options, speech = MODELS[name]
            root = None
            if tiny is not None:
                root = tmp / tiny
                subprocess.run([sys.executable, str(SCRIPTS / "make_tiny_checkpoint.py"), "--family", tiny, str(root)], check=True, capture_output=True)
            runs: dict[str, list[dict[str, Any]]] = {q: [] for q in QUANTIZATIONS}
            for repeat in range(args.repeats):
                for quantization, words in QUANTIZATIONS.items():
                    runs[quantization].append(render(model, root, options, speech, words, args.threads, tmp))
                    print(name, quantization, repeat, runs[quantization][-1], flush=True)
            result["models"][name] = {"speech_s": round(speech_seconds(speech), 2)} | {
                q: {
                    "weight_bytes": weights_of(model, root, QUANTIZATIONS[q]),
                    **{k: statistics.median(r[k] for r in done) for k in ("fps_out", "realtime_factor", "ttff_s", "peak_rss_bytes")},
                    "runs": done,
                }
                for q, done in runs.items()
            }
    (args.out / "cpu-quantization.json").write_text(json.dumps(result, indent=2) + "\n")
    print("| model | weights | weight bytes | fps | real-time factor | first frame, s | peak RSS |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for name, rows in result["models"].items():
        for q, row in ((q, row) for q, row in rows.items() if q in QUANTIZATIONS):
            print(
                f"| {name} | {q} | {row['weight_bytes'] / 2**20:.2f} MiB | {row['fps_out']:.1f} | {row['realtime_factor']:.2f}x | "
                f"{row['ttff_s']:.2f} | {row['peak_rss_bytes'] / 2**20:.0f} MiB |"
            )


if __name__ == "__main__":
    main()
