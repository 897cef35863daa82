"""``--help`` that shows each option's default once: not at all where it is None, off or empty (the help text says what happens then)."""

from __future__ import annotations

import argparse
from typing import NoReturn


class DefaultsHelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    def _get_help_string(self, action: argparse.Action) -> str | None:
        if action.default is None or action.default is False or action.default == "" or action.default is argparse.SUPPRESS:
            return action.help
        return super()._get_help_string(action)


class OneLineErrors(argparse.ArgumentParser):
    """A usage mistake is one ``error: ...`` line (exit code 2) like every other bad input, pointing at ``--help`` instead of printing the usage."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"error: {message}; see '{self.prog} --help'\n")
