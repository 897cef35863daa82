"""``--help`` teaches: one default per option, the same words for the same option on every command, every render option in the README."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from avatarstream.cli.main import build_parser

README = Path(__file__).parents[2] / "README.md"


def _commands(model: str | None = "demo") -> dict[str, argparse.ArgumentParser]:
    parser = build_parser(model)
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def _option_help(command: argparse.ArgumentParser) -> dict[str, str]:
    """Each option's rendered help text, joined onto one line."""
    formatter = command._get_formatter()
    return {
        a.option_strings[-1]: " ".join((formatter._expand_help(a) if a.help else "").split())
        for a in command._actions
        if a.option_strings and a.help is not argparse.SUPPRESS
    }


@pytest.mark.parametrize("name", sorted(_commands()))
def test_each_default_is_printed_once_and_never_empty(name: str) -> None:
    for option, text in _option_help(_commands()[name]).items():
        assert text.count("(default") <= 1, f"{name} {option}: {text}"
        assert "(default: )" not in text and "(default: None)" not in text, f"{name} {option}: {text}"


def test_shared_options_read_the_same_on_every_command() -> None:
    helps = {name: _option_help(command) for name, command in _commands().items()}
    for option in ("--device", "--threads"):
        texts = {helps[name][option] for name in helps if option in helps[name]}
        assert len(texts) == 1, f"{option} is worded differently: {texts}"
    for model, options in (("demo", ("--model", "--weights", "--chunk-frames")), ("infinitetalk", ("--dtype", "--model-preset"))):
        helps = {name: _option_help(command) for name, command in _commands(model).items()}
        for option in options:  # the commands that run any family derive its flags from one dataclass
            texts = {helps[name][option] for name in ("render", "serve", "bench", "fleet")}
            assert len(texts) == 1, f"{option} is worded differently: {texts}"
    assert all("--torch-threads" not in h for h in helps.values())


def test_readme_options_table_lists_every_render_option() -> None:
    table = README.read_text().split("## Render", 1)[1].split("\n## ", 1)[0]
    listed = set(re.findall(r"`(--[a-z0-9-]+)", table))
    shown = [a for a in _commands()["render"]._actions if a.help is not argparse.SUPPRESS]  # old names (--preset) are hidden
    options = {o for a in shown for o in a.option_strings if o.startswith("--") and o != "--help"}
    options -= {o for o in options if o.startswith("--no-") and o != "--no-progress"}  # the negative half of --x/--no-x
    assert options - listed == set(), f"README's render table lacks {sorted(options - listed)}"
    other_models = {o for a in _commands("infinitetalk")["render"]._actions for o in a.option_strings}  # named, with a link to their page
    assert listed - options - other_models == set(), f"README lists options render does not have: {sorted(listed - options - other_models)}"
