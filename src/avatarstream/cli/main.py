"""``avatarstream``: the command-line entry point.

Every subcommand is a thin shell: parse, validate, call the pipeline API,
report. Errors the user can fix are printed as one line (``error: ...``) with
exit code 2 for bad input and 1 for failures during a run.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from avatarstream import stop_requests
from avatarstream.cli import bench, families, fleet, livekit_worker, parity, render, serve
from avatarstream.cli import eval as eval_cli
from avatarstream.cli.help_format import OneLineErrors
from avatarstream.cli.model_args import selected_model, selected_upscaler, unused_flags
from avatarstream.errors import AvatarStreamError


def build_parser(model: str | None = None, upscaler: str | None = None) -> argparse.ArgumentParser:
    """The whole command line; ``model``'s and ``upscaler``'s own flags are added to the commands that run a model."""
    parser = OneLineErrors(
        prog="avatarstream",
        description="Real-time, audio-driven avatar video: chunked flow-matching generation with constant memory.",
        epilog="Run 'avatarstream COMMAND --help' for the options of a command.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    render.add_parser(commands, model, upscaler)
    bench.add_parser(commands, model, upscaler)
    serve.add_parser(commands, model, upscaler)
    fleet.add_parser(commands, model, upscaler)
    livekit_worker.add_parser(commands, model, upscaler)
    eval_cli.add_parser(commands)
    parity.add_parser(commands)
    families.add_parser(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(selected_model(words), selected_upscaler(words))
    args, extra = parser.parse_known_args(words)
    if extra:
        model = getattr(args, "model", None)
        parser.error((model is not None and unused_flags(model, extra, getattr(args, "upscale", None))) or f"unrecognized arguments: {' '.join(extra)}")
    args.argv = words  # what --nproc re-runs under torchrun
    speaks = os.environ.get("RANK", "0") == "0"
    try:
        with stop_requests.handled():  # Ctrl-C and SIGTERM finalize the outputs on the way out
            return int(args.run(args) or 0)
    except AvatarStreamError as exc:
        if not speaks:  # under torchrun rank 0 says it once, with the failing rank's words, and its status is the command's;
            return 0  # a non-zero status here would make the launcher stop rank 0 before it has finalized its outputs
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        if speaks:
            print("interrupted: outputs written so far were finalized", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
