"""A session's ``model_options``: a JSON object of the model's own options, checked by the family's dataclass.

The shared layers never name an option: the family's ``FamilyOptions`` class
says which exist, their ranges and their scopes. A session may set options of
scope ``request`` (what one session shows) and ``build`` (how chunks are
generated: a pipeline of its own, pipelines.py); options of scope ``load`` are
chosen when the server starts.
"""

from __future__ import annotations

import json
from typing import Any

from avatarstream.errors import InputError
from avatarstream.families.options import FamilyOptions, refuse_scope

FIELD_HELP = (
    'JSON object of the model\'s own options for this session, e.g. {"name": value}; merged over the options the server was '
    "started with. Options of scope request change what this session shows; options of scope build change how its chunks are "
    "generated (the session gets a pipeline of its own; a server keeps a few such sets at a time); options of scope load are "
    "chosen when the server starts and are refused here."
)
LOAD_REFUSED = "chosen when the server starts (how the model's weights are read), not per session"
MAX_TEXT = 20_000  # characters of the form field


def parse_model_options(options: type[FamilyOptions], text: str) -> FamilyOptions:
    """The options a session asks for (not yet merged over the server's); an InputError names the option and its range."""
    try:
        value = json.loads(text or "{}")
    except ValueError as err:
        raise InputError(f'model_options must be a JSON object of the model\'s options such as {{"name": value}}; it is not JSON ({err})') from None
    if not isinstance(value, dict):
        raise InputError(f'model_options must be a JSON object of the model\'s options such as {{"name": value}}, got {_json_type(value)}')
    try:
        parsed = options.parse(value)
        refuse_scope(parsed, "load", LOAD_REFUSED)
    except InputError as err:
        raise InputError(f"model_options: {by_name(str(err), options)}") from None
    return parsed


def by_name(message: str, options: type[FamilyOptions]) -> str:
    """A message of the family's (which names options by their command-line flag) with each option as a client sends it."""
    for spec in sorted(options.specs(), key=lambda s: len(s.flag), reverse=True):  # --a-b before --a
        message = message.replace(spec.flag, spec.name)
    return message


def openapi_field(options: type[FamilyOptions], model: str) -> dict[str, Any]:
    """What OpenAPI says of the ``model_options`` form field on a server of ``model``: the options' JSON schema and scopes."""
    scopes = {scope: [s.name for s in options.specs() if s.scope == scope] for scope in ("request", "build", "load")}
    listed = "; ".join(f"{scope}: {', '.join(names)}" for scope, names in scopes.items() if names) or "none"
    return {
        "description": f"{FIELD_HELP} This server runs `{model}`; its options by scope ({listed}).",
        "contentMediaType": "application/json",
        "contentSchema": options.json_schema(),
    }


def _json_type(value: Any) -> str:
    return {list: "an array", str: "a string", bool: "true or false", type(None): "null"}.get(type(value), "a number")
