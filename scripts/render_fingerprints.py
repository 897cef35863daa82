#!/usr/bin/env python3
"""Render every bundled and tiny family in several one-process layouts and print a SHA-256 per render.

A refactor of the chunk loop, the runtime or a family's assembly must not change a single frame. Run this before and
after (the same machine and thread count: bits depend on them) and compare the two JSON files::

    python scripts/render_fingerprints.py --out before.json      # on the old commit
    python scripts/render_fingerprints.py --out after.json --compare before.json

Each case hashes every frame and audio sample the pipeline yields, in order, with the timeline position of each
stretch. The parallel layouts are not run here: their tests compare them with one process frame for frame.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import torch

from avatarstream.families.assemble import build_pipeline
from avatarstream.families.registry import load_family, names
from avatarstream.sources.audio_file import open_audio_file
from avatarstream.sources.bundled import DEFAULT_REFERENCE, DEFAULT_SPEECH
from avatarstream.sources.pcm import PcmBlock

SCRIPTS = Path(__file__).resolve().parent
SECONDS = 3.0  # of the bundled speech: enough for several chunks and seams in every family

#: name -> (model, tiny checkpoint to write with scripts/make_tiny_checkpoint.py --family, options); None: no weights folder
MODELS: dict[str, tuple[str, str | None, dict[str, Any]]] = {
    "demo": ("demo", None, {}),
    "demo-tiny": ("demo-tiny", None, {"chunk_frames": 6, "interp_frames": 2}),
    "infinitetalk-tiny": ("infinitetalk", "infinitetalk", {"preset": "flashtalk", "size": [32, 32]}),
    "liveavatar-tiny": ("liveavatar", "liveavatar", {"size": [64, 64], "cache_blocks": 1, "audio_window_s": 1.0, "audio_lookahead": 4}),
    "colourbars": ("colourbars", None, {}),
}
#: name -> the runtime's arguments
LAYOUTS: dict[str, dict[str, Any]] = {
    "inline": {"overlap": False, "read_ahead": False},
    "overlap": {"overlap": True, "read_ahead": False},
    "overlap+read-ahead": {"overlap": True, "read_ahead": True},
}


def speech() -> Iterator[PcmBlock]:
    """The first ``SECONDS`` of the bundled speech, in the blocks a file source gives."""
    left = SECONDS
    for block in open_audio_file(DEFAULT_SPEECH):
        keep = min(block.samples.shape[-1], round(left * block.sample_rate))
        yield PcmBlock(block.samples[..., :keep], block.sample_rate)
        left -= keep / block.sample_rate
        if left <= 0:
            return


def fingerprint(model: str, weights: Path | None, options: dict[str, Any], layout: dict[str, Any]) -> dict[str, Any]:
    family = load_family(model, weights, seed=1)
    pipeline = build_pipeline(family, torch.device("cpu"), options, **layout)
    image = family.reference(DEFAULT_REFERENCE, options)
    digest = hashlib.sha256()
    frames = 0
    for media in pipeline.stream(speech(), image, "a person talking", seed=3):
        digest.update(np.int64(media.first_frame).tobytes())
        digest.update(np.ascontiguousarray(media.frames).tobytes())
        digest.update(np.ascontiguousarray(media.audio).tobytes())
        frames += media.num_frames
    return {"frames": frames, "sha256": digest.hexdigest()}


def tiny_weights(family: str, root: Path) -> Path:
    """A tiny checkpoint of ``family`` under ``root``, written once (seed 7) by the project's own script."""
    folder = root / family
    if not folder.is_dir():
        subprocess.run([sys.executable, str(SCRIPTS / "make_tiny_checkpoint.py"), "--family", family, "--seed", "7", str(folder)], check=True)
    return folder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True, help="JSON file to write the fingerprints to")
    parser.add_argument("--compare", type=Path, help="an earlier run's JSON: exit 1 unless every case matches it")
    parser.add_argument("--weights", type=Path, default=Path("out/fingerprint-weights"), help="where the tiny checkpoints are written (once)")
    parser.add_argument("--only", nargs="*", default=(), help="model names to run (default: every one installed)")
    args = parser.parse_args()
    torch.set_num_threads(1)  # the last bits of a frame depend on the thread count
    results: dict[str, Any] = {}
    for name, (model, tiny, options) in MODELS.items():
        if (args.only and name not in args.only) or model not in names():
            continue
        weights = tiny_weights(tiny, args.weights) if tiny is not None else None
        for layout_name, layout in LAYOUTS.items():
            key = f"{name} / {layout_name}"
            results[key] = fingerprint(model, weights, options, layout)
            print(f"{key}: {results[key]['frames']} frames {results[key]['sha256'][:16]}", flush=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    if args.compare is not None:
        before = json.loads(args.compare.read_text())
        differ = [key for key in results if key in before and before[key] != results[key]]
        missing = [key for key in before if key not in results]
        print(f"{len(results) - len(differ)} of {len(results)} renders identical to {args.compare}; differ: {differ or 'none'}; not run: {missing or 'none'}")
        sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()
