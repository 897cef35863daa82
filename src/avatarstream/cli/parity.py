"""``avatarstream parity DIR``: check a port against golden fixtures made with the reference implementation."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def add_parser(commands: argparse._SubParsersAction) -> None:
    p = commands.add_parser(
        "parity",
        help="compare a model family's port with golden outputs of its reference implementation",
        description=(
            "Pick the model family that ports DIR/golden.json's reference repository and check the port against the set. "
            "A component set (golden.json has cases): load the weights in DIR/weights/ (laid out as the downloads are), run "
            "every case in DIR/cases/ (network forwards, audio path, VAE decode and encode, sampler) and print the max absolute "
            "error of each compared tensor next to its tolerance. A whole-video set (golden.json has the reference CLI's command "
            "and settings): render that run through the product path (avatarstream.render, as `avatarstream render` does, with "
            "the options the family maps the run's settings to), write its frames to --frames OUT as PNGs and compare them with DIR/cases/frames.safetensors "
            "by the set's tolerances (PSNR, worst frame, values differing, mean difference); without that file it says there was "
            "nothing to compare. Exit code 1 when any figure is past its limit. To check a port of another checkpoint, make "
            "goldens of it with the reference code in the same format and run this on them."
        ),
        epilog="examples: avatarstream parity path/to/golden-set --json parity.json; avatarstream parity path/to/video-set --frames out/frames",
    )
    p.add_argument("golden_dir", type=Path, metavar="DIR", help="golden set: golden.json, weights/ and cases/")
    p.add_argument("--json", type=Path, metavar="FILE", help="also write every check as JSON")
    p.add_argument("--frames", type=Path, metavar="OUT", help="whole-video sets: a new or empty folder for the rendered frames (000000.png, ...)")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from avatarstream.golden_sets import run_golden_set

    checks = run_golden_set(args.golden_dir, frames=args.frames, on_case=lambda name: print(f"running case {name} ...", file=sys.stderr))
    if not checks:
        print(f"rendered the set's run: frames in {args.frames}; the set has no cases/frames.safetensors, so there was nothing to compare")
        return 0
    width = max(len(f"{c.case}/{c.name}") for c in checks)
    print(f"{'check':<{width}}  {'value':>11}  {'limit':>11}  result")
    for c in checks:
        limit = f"{'>=' if c.bound == 'min' else '<='} {c.tolerance:.3g}"
        print(f"{c.case + '/' + c.name:<{width}}  {c.max_abs_err:>11.4g}  {limit:>11}  {'ok' if c.passed else 'OVER'}")
    failed = [c for c in checks if not c.passed]
    print(f"{len(checks) - len(failed)} of {len(checks)} checks within tolerance")
    if args.json:
        rows = [{"case": c.case, "name": c.name, "max_abs_err": c.max_abs_err, "tolerance": c.tolerance, "bound": c.bound, "passed": c.passed} for c in checks]
        args.json.write_text(json.dumps(rows, indent=2))
    return 1 if failed else 0
