"""``avatarstream eval``: measure lip sync, identity over time and seams on held-out procedural avatars.

The model is any registered family that can switch its seam smoothing off (``evaluation/run.py`` says how it declares
that); for one that cannot, eval says so before it loads anything.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from avatarstream.cli.help_format import DefaultsHelpFormatter
from avatarstream.cli.runtime_args import add_runtime_arguments
from avatarstream.errors import InputError
from avatarstream.families.registry import DEFAULT_MODEL, family_class, load_family, names


def add_parser(commands: argparse._SubParsersAction) -> None:
    p = commands.add_parser(
        "eval",
        help="measure lip sync, identity drift and seams on held-out avatars",
        description=(
            "Render held-out procedural identities with held-out speech (espeak-ng) and measure: lip sync "
            "(mouth openness in the frames vs ground truth), identity error per minute of a long run, and the "
            "seam ratio with and without I-chunks. Writes eval.json and PNG plots."
        ),
        epilog="example: avatarstream eval --out bench/results/eval --minutes 10",
        formatter_class=DefaultsHelpFormatter,
    )
    p.add_argument("--out", type=Path, default=Path("out/eval"), help="folder for eval.json and the plots")
    p.add_argument("--weights", type=Path, help="weights folder (default: the family's own)")
    p.add_argument(
        "--model",
        default=DEFAULT_MODEL,
        choices=names(),
        help="the model family to measure: it renders procedural avatars, which eval measures against their ground truth, and can switch its seam smoothing off",
    )
    add_runtime_arguments(p)
    p.add_argument("--clips", type=int, default=4, help="held-out identities rendered as short clips")
    p.add_argument("--clip-seconds", type=float, default=20.0, help="length of each short clip")
    p.add_argument("--minutes", type=float, default=10.0, help="length of the long identity run (0 skips it)")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from avatarstream.avatars.speech import espeak_available
    from avatarstream.evaluation.plots import write_plots
    from avatarstream.evaluation.run import evaluate, seam_smoothing_off
    from avatarstream.runtime.cpu_threads import set_threads
    from avatarstream.runtime.devices import resolve_device

    if args.clips < 1 or args.clip_seconds < 2 or args.minutes < 0:
        raise InputError("--clips must be >= 1, --clip-seconds >= 2 and --minutes >= 0")
    seam_smoothing_off(family_class(args.model))  # a model eval cannot measure is refused before anything loads
    if not espeak_available():
        raise InputError("espeak-ng is not installed; it makes the held-out speech (run scripts/system-deps.sh)")
    set_threads(args.threads)
    device = resolve_device(args.device)
    family = load_family(args.model, args.weights)
    results, series = evaluate(family, device, clips=args.clips, clip_seconds=args.clip_seconds, long_minutes=args.minutes)
    results["weights"] = family.weights
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "eval.json").write_text(json.dumps(results, indent=2))
    plots = write_plots(series, args.out, family.fps)
    print(
        json.dumps(
            {k: results[k] for k in ("lip_sync_correlation", "seam_ratio_with_i_chunks", "seam_ratio_without_i_chunks", "meets_targets") if k in results},
            indent=2,
        )
    )
    if "long" in results:
        print(f"identity last/first minute: {results['long']['identity_last_over_first']}")
    print(f"wrote {args.out / 'eval.json'} and {', '.join(str(p) for p in plots)}")
    return 0
