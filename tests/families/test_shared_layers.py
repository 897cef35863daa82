"""The shared layers name no model family and none of a family's options: every family plugs in through the registry."""

from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path

import avatarstream
from avatarstream.families.registry import family_class, names

PACKAGE = Path(avatarstream.__file__).parent
SHARED = [*(PACKAGE / layer for layer in ("cli", "serve", "fleet", "pipeline", "runtime")), PACKAGE / "api.py"]


def _files() -> list[Path]:
    return sorted(f for root in SHARED for f in ([root] if root.is_file() else root.rglob("*.py")))


def _words() -> tuple[set[str], set[str]]:
    """(identifiers, flags and names in strings) that would name a registered family or one of its options."""
    identifiers: set[str] = set()
    texts: set[str] = set()
    for name in names():
        identifiers |= {name.replace("-", "_"), name.split("-")[0]}
        texts |= {name, name.split("-")[0]}
        for spec in family_class(name).Options.specs():
            texts.add(spec.flag)
            if "_" in spec.name:  # one-word names (steps, size, base) are ordinary words too; their flags are checked
                identifiers.add(spec.name)
                texts.add(spec.name)
    return identifiers, texts


def _mentions(path: Path, identifiers: set[str], texts: set[str]) -> list[str]:
    where = path.relative_to(PACKAGE) if path.is_relative_to(PACKAGE) else path.name
    found = []
    for token in tokenize.generate_tokens(io.StringIO(path.read_text()).readline):
        if token.type == tokenize.NAME and token.string in identifiers:
            found.append(f"{where}:{token.start[0]}: {token.string}")
        elif token.type == tokenize.STRING:
            for word in texts:
                if re.search(rf"(?<![\w-]){re.escape(word)}(?![\w-])", token.string):
                    found.append(f"{where}:{token.start[0]}: {word!r} in a string")
    return found


def test_the_shared_layers_name_no_family_and_no_family_option() -> None:
    identifiers, texts = _words()
    assert {"colourbars", "--bars"} <= texts, "the test family is installed (make test installs tests/plugins/colourbars)"
    found = [m for f in _files() for m in _mentions(f, identifiers, texts)]
    assert not found, "\n".join(found)


def test_the_scan_finds_a_family_named_in_a_shared_layer(tmp_path: Path) -> None:
    identifiers, texts = _words()
    leaky = tmp_path / "leaky.py"
    leaky.write_text('if args.model == "colourbars":\n    chunk_frames = args.bars\nflag = "--bars"\n')
    found = _mentions(leaky, identifiers, texts)
    assert [m.split(": ", 1)[1] for m in found] == ["'colourbars' in a string", "chunk_frames", "'--bars' in a string"], found
