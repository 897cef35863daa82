"""A family's own flags name their values by kind in ``--help`` (N, X, PATH, WxH or the choices), never by argparse's
``MODEL_OPTION_CHUNK_FRAMES`` placeholder."""

from __future__ import annotations

import argparse

import pytest

from avatarstream.cli.main import build_parser
from avatarstream.families.registry import names


def _help(model: str, command: str) -> str:
    parser = build_parser(model)
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices
    return " ".join(commands[command].format_help().split())


@pytest.mark.parametrize("model", names())
def test_every_family_flag_names_its_value_briefly(model: str) -> None:
    for command in ("render", "serve", "bench", "fleet"):
        assert "MODEL_OPTION" not in _help(model, command), f"{command} --model {model}"


def test_values_are_named_by_their_type() -> None:
    text = _help("demo", "render")
    assert "--chunk-frames N " in text and "--shift X " in text and "--avatar SEED " in text  # a name the option gives wins
