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
            "Pick the model family that ports DIR/golden.json's reference repository, load the weights in DIR/weights/ "
            "(laid out as the downloads are), run every case in DIR/cases/ as golden.json describes it (network "
            "forwards, audio path, VAE decode and encode, sampler), and print the max absolute error of each compared "
            "tensor next to its tolerance. Exit code 1 when any error is over its tolerance. To check a port of another "
            "checkpoint, make goldens of it with the reference code in the same format and run this on them."
        ),
        epilog="example: avatarstream parity path/to/golden-set --json parity.json   (`avatarstream families` lists the families)",
    )
    p.add_argument("golden_dir", type=Path, metavar="DIR", help="golden set: golden.json, weights/ and cases/")
    p.add_argument("--json", type=Path, metavar="FILE", help="also write every check as JSON")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from avatarstream.parity import run_golden_set

    checks = run_golden_set(args.golden_dir, on_case=lambda name: print(f"running case {name} ...", file=sys.stderr))
    width = max(len(f"{c.case}/{c.name}") for c in checks)
    print(f"{'check':<{width}}  {'max abs err':>11}  {'tolerance':>9}  result")
    for c in checks:
        print(f"{c.case + '/' + c.name:<{width}}  {c.max_abs_err:>11.3g}  {c.tolerance:>9.3g}  {'ok' if c.passed else 'OVER'}")
    failed = [c for c in checks if not c.passed]
    print(f"{len(checks) - len(failed)} of {len(checks)} checks within tolerance")
    if args.json:
        rows = [{"case": c.case, "name": c.name, "max_abs_err": c.max_abs_err, "tolerance": c.tolerance, "passed": c.passed} for c in checks]
        args.json.write_text(json.dumps(rows, indent=2))
    return 1 if failed else 0
