"""``avatarstream families``: the installed model families and upscalers, what each is and which weights it needs.

It reads each one's description (``registry.describe``), not its model code, so it answers as fast as ``--help``.
"""

from __future__ import annotations

import argparse

from avatarstream.errors import InputError
from avatarstream.families.registry import FAMILIES, UPSCALERS, Kind, describe, registered


def add_parser(commands: argparse._SubParsersAction) -> None:
    p = commands.add_parser(
        "families",
        help="list the installed model families and upscalers, and the weights each needs",
        description="List the model families --model can name and the upscalers --upscale can name: the ones avatarstream "
        "ships and those installed packages register.",
        epilog="a family's own options: avatarstream render --model NAME --help; an upscaler's: avatarstream render --upscale NAME --help",
    )
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    _list(FAMILIES)
    print("\nupscalers (--upscale NAME: every frame of any model comes out larger)\n")
    _list(UPSCALERS)
    return 0


def _list(kind: Kind) -> None:
    for entry in registered(kind).values():
        try:
            described = describe(entry.name, kind)
        except InputError as exc:  # a broken plug-in is listed, not fatal
            print(f"{entry.name}  (from {entry.origin}) cannot be loaded: {exc}")
            continue
        origin = "" if entry.origin == "avatarstream" else f"  (from {entry.origin})"
        print(f"{entry.name}{origin}\n  {described.summary}\n  weights: {described.weights_help}")
