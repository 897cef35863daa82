"""``--model``, ``--weights`` and the selected family's own flags, shared by ``render``, ``serve``, ``fleet`` and ``bench``.

A family declares its options as a dataclass (``families/options.py``); its
flags are added only for the model the command line names, so
``render --model NAME --help`` shows them and ``render --help`` says how to.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from avatarstream.cli.help_format import name_values
from avatarstream.families.options import FamilyOptions
from avatarstream.families.registry import DEFAULT_MODEL, names, options_class, registered

HELP_FLAGS = ("-h", "--help")


def selected_model(argv: Sequence[str]) -> str | None:
    """The family whose flags a command line needs: ``--model``'s value (the last one, as argparse takes it), the default
    one, or None for a plain ``--help``."""
    named = [w for i, w in enumerate(argv) if (i > 0 and argv[i - 1] == "--model") or w.startswith("--model=")]
    if named:
        last = named[-1]
        return last.partition("=")[2] if last.startswith("--model=") else last
    return None if any(word in HELP_FLAGS for word in argv) else DEFAULT_MODEL


def add_model_arguments(p: argparse.ArgumentParser, model: str | None) -> None:
    """``--model`` and ``--weights``, then ``model``'s own options (none for an unknown name: ``--model`` refuses it)."""
    g = p.add_argument_group("model", "which model runs and from which weights")
    g.add_argument(
        "--model",
        default=DEFAULT_MODEL,
        choices=names(),
        help="model family; `avatarstream families` says what each is and which weights it needs",
    )
    g.add_argument("--weights", type=Path, help="the model's weights folder, laid out as downloaded (default: the model's own, where it has one)")
    if model is None or model not in registered():
        p.epilog = (p.epilog + "\n" if p.epilog else "") + f"a model's own options: {p.prog} --model NAME --help (models: {', '.join(names())})"
        return
    options = options_class(model)
    group = p.add_argument_group(f"{model} options", f"the {model} model's own; unset options take its (or its preset's) defaults")
    options.add_arguments(group)
    name_values(group)  # a value is N or PATH in --help, not the destination's name


def unused_flags(model: str, extra: Sequence[str]) -> str | None:
    """What to say of command-line words no option took, when some are other models' options (None when none is)."""
    flags = [word.partition("=")[0] for word in extra if word.startswith("--")]
    owners = {flag: [name for name in names() if name != model and flag in {s.flag for s in options_class(name).specs()}] for flag in flags}
    known = {flag: models for flag, models in owners.items() if models}
    if not known:
        return None
    said = "; ".join(f"{flag}, an option of {', '.join(models)}" for flag, models in known.items())
    return f"the {model} model has no use for {said} (add --model NAME; `--model {model} --help` lists this model's own options)"


def model_options(args: argparse.Namespace) -> FamilyOptions:
    """The selected family's options as the command line set them (checked by the family's dataclass)."""
    return options_class(args.model).from_namespace(args)
