"""``--model``, ``--weights``, ``--upscale`` and the selected family's and upscaler's own flags, shared by ``render``,
``serve``, ``fleet`` and ``bench``.

A family declares its options as a dataclass (``families/options.py``); its
flags are added only for the model the command line names, so
``render --model NAME --help`` shows them and ``render --help`` says how to.
An upscaler's flags are added the same way for ``--upscale NAME``, each after
``--upscale-`` (``--upscale-mode full``).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from avatarstream.cli.help_format import name_values
from avatarstream.errors import InputError
from avatarstream.families.options import FamilyOptions
from avatarstream.families.registry import DEFAULT_MODEL, UPSCALERS, Upscale, names, options_class, registered

HELP_FLAGS = ("-h", "--help")
UPSCALE_FLAG_PREFIX = "upscale-"
UPSCALE_DEST_PREFIX = "upscale_option_"


def _flag_value(argv: Sequence[str], flag: str) -> str | None:
    """The last value given to ``flag`` (as argparse takes it), or None."""
    named = [w for i, w in enumerate(argv) if (i > 0 and argv[i - 1] == flag) or w.startswith(flag + "=")]
    if not named:
        return None
    last = named[-1]
    return last.partition("=")[2] if last.startswith(flag + "=") else last


def selected_model(argv: Sequence[str]) -> str | None:
    """The family whose flags a command line needs: ``--model``'s value (the last one, as argparse takes it), the default
    one, or None for a plain ``--help``."""
    named = _flag_value(argv, "--model")
    if named is not None:
        return named
    return None if any(word in HELP_FLAGS for word in argv) else DEFAULT_MODEL


def selected_upscaler(argv: Sequence[str]) -> str | None:
    """The upscaler whose flags a command line needs: ``--upscale``'s value, or None."""
    return _flag_value(argv, "--upscale")


def add_model_arguments(p: argparse.ArgumentParser, model: str | None, upscaler: str | None = None) -> None:
    """``--model`` and ``--weights``, then ``model``'s own options (none for an unknown name: ``--model`` refuses it), then
    ``--upscale`` and ``upscaler``'s own options."""
    _add_family_arguments(p, model)
    _add_upscale_arguments(p, upscaler)


def _add_family_arguments(p: argparse.ArgumentParser, model: str | None) -> None:
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


def _add_upscale_arguments(p: argparse.ArgumentParser, upscaler: str | None) -> None:
    g = p.add_argument_group("upscaler", "a super-resolution stage after the model: every frame comes out larger")
    g.add_argument(
        "--upscale",
        metavar="NAME",
        choices=names(UPSCALERS),
        help=f"upscaler to run on the model's frames: {', '.join(names(UPSCALERS))} (`avatarstream families`)",
    )
    g.add_argument("--upscale-weights", type=Path, metavar="DIR", help="the upscaler's weights folder, laid out as downloaded")
    if upscaler is None or upscaler not in registered(UPSCALERS):
        return
    options = options_class(upscaler, UPSCALERS)
    group = p.add_argument_group(f"{upscaler} options", f"the {upscaler} upscaler's own; unset options take its defaults")
    options.add_arguments(group, flag_prefix=UPSCALE_FLAG_PREFIX, dest_prefix=UPSCALE_DEST_PREFIX)
    name_values(group)


def unused_flags(model: str, extra: Sequence[str], upscaler: str | None = None) -> str | None:
    """What to say of command-line words no option took, when some are other models' or upscalers' options (None when none is)."""
    flags = [word.partition("=")[0] for word in extra if word.startswith("--")]
    owners = {flag: [name for name in names() if name != model and flag in {s.flag for s in options_class(name).specs()}] for flag in flags}
    known = {flag: models for flag, models in owners.items() if models}
    scaling = {flag: [n for n in names(UPSCALERS) if n != upscaler and flag in options_class(n, UPSCALERS).flags(UPSCALE_FLAG_PREFIX)] for flag in flags}
    if any(scaling.values()):
        said = "; ".join(f"{flag}, an option of the {', '.join(ups)} upscaler" for flag, ups in scaling.items() if ups)
        return f"{said}: add --upscale NAME (`--upscale NAME --help` lists an upscaler's own options)"
    if not known:
        return None
    said = "; ".join(f"{flag}, an option of {', '.join(models)}" for flag, models in known.items())
    return f"the {model} model has no use for {said} (add --model NAME; `--model {model} --help` lists this model's own options)"


def model_options(args: argparse.Namespace) -> FamilyOptions:
    """The selected family's options as the command line set them (checked by the family's dataclass)."""
    return options_class(args.model).from_namespace(args)


def upscale_request(args: argparse.Namespace) -> Upscale:
    """The upscaler the command line names, its weights folder and its options (checked by its dataclass)."""
    name = getattr(args, "upscale", None)
    if name is None:
        return Upscale(None, getattr(args, "upscale_weights", None))
    options = options_class(name, UPSCALERS)
    try:
        parsed = options.from_namespace(args, UPSCALE_DEST_PREFIX)
    except InputError as err:  # the dataclass names its own flags; the command line gave them after --upscale-
        said = str(err)
        for spec, flag in zip(options.specs(), options.flags(UPSCALE_FLAG_PREFIX), strict=True):
            said = said.replace(spec.flag + " ", flag + " ")
        raise InputError(said) from None
    return Upscale(name, getattr(args, "upscale_weights", None), parsed)
