"""``--help`` that shows each option's default once (not at all where it is None, off or empty: the help text says what
happens then) and names a value by its kind where an option names it no better."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, NoReturn

#: A value's name in ``--help`` by its type, for an option that gives none (argparse would print its destination's name
#: in capitals, ``MODEL_OPTION_`` and the field's).
METAVARS: dict[Any, str] = {int: "N", float: "X", Path: "PATH", str: "TEXT"}


class DefaultsHelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    def _get_help_string(self, action: argparse.Action) -> str | None:
        if action.default is None or action.default is False or action.default == "" or action.default is argparse.SUPPRESS:
            return action.help
        return super()._get_help_string(action)


class OneLineErrors(argparse.ArgumentParser):
    """A usage mistake is one ``error: ...`` line (exit code 2) like every other bad input, pointing at ``--help`` instead of printing the usage."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"error: {message}; see '{self.prog} --help'\n")


def name_values(group: argparse._ArgumentGroup) -> None:
    """Name the value of each option in ``group`` that takes one, names none and has no choices (argparse lists those)."""
    for action in group._group_actions:
        if action.metavar is None and action.choices is None and action.nargs != 0:
            action.metavar = METAVARS.get(action.type, "VALUE")
