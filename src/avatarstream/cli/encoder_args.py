"""The H.264 encoder's options that ``render``, ``serve`` and ``fleet`` share, and the old names they still take."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any


class RenamedOption(argparse.Action):
    """An option's old name: hidden from ``--help``, still taken, with a one-line note on stderr naming the new one."""

    def __init__(self, option_strings: Sequence[str], dest: str, new: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, default=argparse.SUPPRESS, help=argparse.SUPPRESS, **kwargs)
        self.new = new

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any, option_string: str | None = None) -> None:
        print(f"warning: {option_string} is now {self.new}; the old name will go away", file=sys.stderr)
        setattr(namespace, self.dest, values)


def add_x264_preset_argument(p: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """``--x264-preset`` (once ``--preset``, a name a model's own presets made ambiguous)."""
    p.add_argument(
        "--x264-preset", default="veryfast", metavar="NAME", help="x264 speed preset, ultrafast to placebo (slower ones take more CPU and compress better)"
    )
    p.add_argument("--preset", dest="x264_preset", action=RenamedOption, new="--x264-preset")
