"""``--help`` that shows each option's default once: not at all where it is None, off or empty (the help text says what happens then)."""

from __future__ import annotations

import argparse


class DefaultsHelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    def _get_help_string(self, action: argparse.Action) -> str | None:
        if action.default is None or action.default is False or action.default == "" or action.default is argparse.SUPPRESS:
            return action.help
        return super()._get_help_string(action)
