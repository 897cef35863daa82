"""The shared layers name no model family and none of a family's options: every family plugs in through the registry.

What counts as naming, in code, strings (docstrings too) and comments alike:

* a registered family's name (``colourbars``, ``demo``, ``demo-tiny``) in any case, as a word of text or of an
  identifier (``InfiniteTalk``, ``DemoFamily``, ``demo_weights``; not ``demos`` or ``demonstrate``);
* one of its options' flags (``--bars``), anywhere in text;
* an option name with an underscore (``chunk_frames``), as an identifier or a word in text: no ordinary word looks like it;
* a one-word option name (``bars``, ``steps``, ``size``) only where it is used AS a family's option, because the same
  word is ordinary framework vocabulary elsewhere (``layout.steps``, ``dtype=``, ``--parallel steps=4``). It is used
  as an option when it is
  - an attribute, a string key or a ``get``/``pop`` key of something whose name ends in ``options``
    (``options.bars``, ``model_options["bars"]``, ``self.options.get("bars")``; ``Options`` too);
  - a string key of a family's ``settings`` (the family interface's mapping: ``family.settings["steps"]``,
    ``family.settings.get("steps")``);
  - a keyword of a call whose callee's name ends in ``options`` (``Options(bars=3)``, ``family.Options(bars=3)``);
  - a key of a mapping given to, or assigned to, a name ending in ``options``
    (``model_options={"bars": 3}``, ``options = dict(bars=3)``).
  Text (a docstring, a message, a comment) is held to the same shapes: ``options.bars``, ``settings["bars"]``,
  ``Options(bars=``, ``model_options {"bars": ...}``.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from dataclasses import dataclass
from pathlib import Path

import avatarstream
from avatarstream.families.registry import family_class, names

PACKAGE = Path(avatarstream.__file__).parent
#: Every package below the families, and the shells above them (DESIGN.md §2, §9).
SHARED_LAYERS = (
    "api.py",
    "benchmarks",
    "benchtools",
    "cli",
    "evaluation",
    "fleet",
    "integrations",
    "parity",
    "pipeline",
    "publish",
    "runtime",
    "serve",
    "sources",
    "weights",
)
SHARED = [PACKAGE / layer for layer in SHARED_LAYERS]
#: Text tokens: strings (docstrings included), f-string parts (Python 3.12 and later) and comments.
TEXT_TOKENS = {tokenize.STRING: "a string", tokenize.COMMENT: "a comment"} | (
    {tokenize.FSTRING_MIDDLE: "a string"} if hasattr(tokenize, "FSTRING_MIDDLE") else {}
)
#: Names that carry a family's options (a FamilyOptions, the API's ``model_options`` mapping, ``family.Options``).
CARRIER = re.compile(r"options$", re.IGNORECASE)


@dataclass(frozen=True)
class Vocabulary:
    families: frozenset[str]  # family names (and their first part: demo of demo-tiny), in any case
    identifiers: frozenset[str]  # option names with "_", as identifiers
    texts: frozenset[str]  # flags and option names with "_", as words in text
    one_word: frozenset[str]  # option names without "_": only where used as an option


def _vocabulary() -> Vocabulary:
    families: set[str] = set()
    identifiers: set[str] = set()
    texts: set[str] = set()
    one_word: set[str] = set()
    for name in names():
        families |= {name, name.split("-")[0]}
        for spec in family_class(name).Options.specs():
            texts.add(spec.flag)
            if "_" in spec.name:
                identifiers.add(spec.name)
                texts.add(spec.name)
            else:
                one_word.add(spec.name)
    return Vocabulary(frozenset(families), frozenset(identifiers), frozenset(texts), frozenset(one_word))


def _names_family(text: str, family: str) -> bool:
    """``family`` in ``text`` in any case, as a word of its own or a part of a camel-case or snake-case name."""
    for match in re.finditer(re.escape(family), text, re.IGNORECASE):
        i, j = match.start(), match.end()
        starts = i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "-") or (text[i - 1].islower() and text[i].isupper())
        ends = j == len(text) or not (text[j].isalnum() or text[j] == "-") or (text[j - 1].islower() and text[j].isupper())
        if starts and ends:
            return True
    return False


def _files() -> list[Path]:
    return sorted(f for root in SHARED for f in ([root] if root.is_file() else root.rglob("*.py")))


# -- one-word options in code ------------------------------------------------------------------------


def _tail(node: ast.expr) -> str:
    """The last name of ``a.b.c`` or ``c`` (empty for anything else)."""
    return node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""


def _carries(node: ast.expr) -> bool:
    return bool(CARRIER.search(_tail(node)))


def _is_settings(node: ast.expr) -> bool:
    """``family.settings``: the family interface's mapping of generation settings."""
    return isinstance(node, ast.Attribute) and node.attr == "settings"


def _string(node: ast.expr | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _keys(mapping: ast.expr) -> list[str]:
    """The string keys of ``{...}`` or the keywords of ``dict(...)``."""
    if isinstance(mapping, ast.Dict):
        return [key for key in map(_string, mapping.keys) if key is not None]
    if isinstance(mapping, ast.Call) and _tail(mapping.func) == "dict":
        return [k.arg for k in mapping.keywords if k.arg is not None]
    return []


def _options_in_code(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, name) of every place the code uses a name as a family's option (the shapes in the module docstring)."""
    used: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _carries(node.value):
            used.append((node.lineno, node.attr))
        elif isinstance(node, ast.Subscript) and (_carries(node.value) or _is_settings(node.value)):
            used += [(node.lineno, key) for key in [_string(node.slice)] if key is not None]
        elif isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr in ("get", "pop") and (_carries(func.value) or _is_settings(func.value)):
                used += [(node.lineno, key) for key in [_string(node.args[0] if node.args else None)] if key is not None]
            if _carries(func):
                used += [(node.lineno, k.arg) for k in node.keywords if k.arg is not None]
            used += [(k.value.lineno, key) for k in node.keywords if k.arg and CARRIER.search(k.arg) for key in _keys(k.value)]
        elif isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(_carries(t) for t in targets):
                used += [(node.lineno, key) for key in _keys(node.value)]
    return used


# -- text ------------------------------------------------------------------------------------------------


def _option_shapes(word: str) -> re.Pattern[str]:
    """The shapes of the module docstring, written out in text (a docstring, a message, a comment)."""
    w = re.escape(word)
    q = "[\"']"
    return re.compile(
        rf"(?i:options)\s*\.\s*{w}\b"  # options.bars
        rf"|(?i:options)\s*(?:\[|\.get\(|\.pop\()\s*{q}{w}{q}"  # options["bars"], options.get("bars")
        rf"|settings\s*(?:\[|\.get\()\s*{q}{w}{q}"  # settings["bars"]
        rf"|(?i:options)\((?:[^()]*,)?\s*{w}\s*="  # Options(bars=
        rf"|(?i:options){q}?\s*[=:]?\s*\{{[^{{}}]*{q}{w}{q}\s*:"  # model_options {"bars": 3}
        rf"|(?i:options)\s*=\s*dict\((?:[^()]*,)?\s*{w}\s*="  # options = dict(bars=
    )


def _mentions(path: Path, words: Vocabulary) -> list[str]:
    where = path.relative_to(PACKAGE) if path.is_relative_to(PACKAGE) else path.name
    source = path.read_text()
    shapes = {word: _option_shapes(word) for word in words.one_word}
    found = []
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        line = token.start[0]
        if token.type == tokenize.NAME:
            if token.string in words.identifiers or any(_names_family(token.string, family) for family in words.families):
                found.append((line, token.string))
        elif token.type in TEXT_TOKENS:
            kind = TEXT_TOKENS[token.type]
            for family in sorted(words.families):
                if _names_family(token.string, family):
                    found.append((line, f"{family!r} in {kind}"))
            for word in sorted(words.texts):
                if re.search(rf"(?<![\w-]){re.escape(word)}(?![\w-])", token.string):
                    found.append((line, f"{word!r} in {kind}"))
            for word, shape in sorted(shapes.items()):
                if shape.search(token.string):
                    found.append((line, f"{word!r} as an option in {kind}"))
    found += [(line, f"{name} as an option") for line, name in _options_in_code(ast.parse(source)) if name in words.one_word]
    return [f"{where}:{line}: {what}" for line, what in sorted(found, key=lambda f: f[0])]


def test_the_shared_layers_name_no_family_and_no_family_option() -> None:
    words = _vocabulary()
    assert "colourbars" in words.families and "--bars" in words.texts and "bars" in words.one_word, (
        "the test family is installed (make test installs tests/plugins/colourbars)"
    )
    found = [m for f in _files() for m in _mentions(f, words)]
    assert not found, "\n".join(found)


LEAKY = '''"""Paints what the colourbars model asks for."""
# with --bars the bars change
if args.model == "colourbars":
    chunk_frames = options.bars  # read as one of its options
    options = {"bars": 3, "width": 2}
    model_options = dict(bars=3)
    render(model_options={"bars": 3})
    family.Options(bars=3)
    steps = family.settings["bars"] + family.settings.get("bars", 0) + model_options.get("bars")
    help = "set options.bars, or model_options {'bars': 3}"
    # model_options["bars"] picks them
bars = layout.steps + args.bars  # ordinary words: not an option here
x = torch.zeros(bars, dtype=x.dtype)
text = "--parallel steps=4 makes four colourbarsish bars"
painter = ColourBarsFamily.load  # a ColourBars model
'''


def test_the_scan_finds_a_family_named_in_a_shared_layer(tmp_path: Path) -> None:
    leaky = tmp_path / "leaky.py"
    leaky.write_text(LEAKY)
    found = [m.split(":", 1)[1] for m in _mentions(leaky, _vocabulary())]
    assert found == [
        "1: 'colourbars' in a string",
        "2: '--bars' in a comment",
        "3: 'colourbars' in a string",
        "4: chunk_frames",
        "4: bars as an option",
        "5: bars as an option",
        "6: bars as an option",
        "7: bars as an option",
        "8: bars as an option",
        "9: bars as an option",
        "9: bars as an option",
        "9: bars as an option",
        "10: 'bars' as an option in a string",
        "11: 'bars' as an option in a comment",
        "15: ColourBarsFamily",
        "15: 'colourbars' in a comment",
    ], found
