"""``avatarstream families``: the installed model families, what each is and which weights it needs.

It reads each family's description (``registry.describe``), not its model code, so it answers as fast as ``--help``.
"""

from __future__ import annotations

import argparse

from avatarstream.errors import InputError
from avatarstream.families.registry import describe, registered


def add_parser(commands: argparse._SubParsersAction) -> None:
    p = commands.add_parser(
        "families",
        help="list the installed model families and the weights each needs",
        description="List the model families --model can name: the ones avatarstream ships and those installed packages register.",
        epilog="a family's own options: avatarstream render --model NAME --help",
    )
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    for entry in registered().values():
        try:
            described = describe(entry.name)
        except InputError as exc:  # a broken plug-in is listed, not fatal
            print(f"{entry.name}  (from {entry.origin}) cannot be loaded: {exc}")
            continue
        origin = "" if entry.origin == "avatarstream" else f"  (from {entry.origin})"
        print(f"{entry.name}{origin}\n  {described.summary}\n  weights: {described.weights_help}")
    return 0
