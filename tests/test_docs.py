"""The README's and docs' code blocks work: Python blocks run as written, and every `avatarstream` command line parses."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from avatarstream.cli.main import build_parser
from avatarstream.cli.model_args import selected_model, selected_upscaler

ROOT = Path(__file__).parents[1]
PAGES = [ROOT / "README.md", ROOT / "MODEL.md", *sorted((ROOT / "docs").rglob("*.md"))]
BLOCK = re.compile(r"(<!-- not run by the tests: (?P<why>[^>]+) -->\n)?```(?P<lang>\w+)\n(?P<code>.*?)```", re.DOTALL)


def _blocks(lang: str) -> list[tuple[str, str, str | None]]:
    return [
        (f"{page.relative_to(ROOT)}#{i}", m["code"], m["why"]) for page in PAGES for i, m in enumerate(BLOCK.finditer(page.read_text())) if m["lang"] == lang
    ]


PYTHON = _blocks("python")


def test_the_pages_have_python_examples() -> None:
    assert len([b for b in PYTHON if b[2] is None]) >= 6


@pytest.mark.parametrize(("where", "code", "skipped_because"), PYTHON, ids=[b[0] for b in PYTHON])
def test_python_block_runs(where: str, code: str, skipped_because: str | None, tmp_path: Path) -> None:
    if skipped_because is not None:
        pytest.skip(skipped_because)
    (tmp_path / "src").symlink_to(ROOT / "src")  # the examples use repository paths; what they write lands in tmp_path
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, check=False, capture_output=True, text=True, timeout=600, env={**os.environ, "PYTHONUNBUFFERED": "1"}
    )
    assert result.returncode == 0, f"{where} failed:\n{result.stderr[-3000:]}"


def _command_lines() -> list[tuple[str, list[str]]]:
    lines = []
    for where, code, _ in _blocks("bash"):
        for line in code.replace("\\\n", " ").splitlines():
            words = shlex.split(line, comments=True)
            while words and re.fullmatch(r"[A-Z_]+=.*", words[0]):  # VAR=value before the command
                words.pop(0)
            if words and Path(words[0]).name == "avatarstream":
                lines.append((where, words[1:]))
    return lines


COMMANDS = _command_lines()


@pytest.mark.parametrize(("where", "argv"), COMMANDS, ids=[f"{w}:{' '.join(a)[:40]}" for w, a in COMMANDS])
def test_documented_command_line_parses(where: str, argv: list[str]) -> None:
    try:
        build_parser(selected_model(argv), selected_upscaler(argv)).parse_args(argv)
    except SystemExit as exit_:
        pytest.fail(f"{where}: `avatarstream {' '.join(argv)}` does not parse (exit {exit_.code})")


def _layout(page: Path) -> str:
    text = page.read_text()
    return text[text.index("Layout") :]


@pytest.mark.parametrize("page", [ROOT / "README.md", ROOT / "docs" / "design.md"], ids=["README", "design"])
def test_layout_names_every_package(page: Path) -> None:
    packages = {p.parent.name for p in (ROOT / "src" / "avatarstream").glob("*/__init__.py")}
    layout = _layout(page)
    assert {p for p in packages if f"{p}/" not in layout} == set(), f"{page.name}'s layout misses packages"


def test_pages_link_only_inside_the_repository() -> None:
    for page in PAGES:
        for target in re.findall(r"\]\(([^)#]+)", page.read_text()):
            if target.startswith(("http://", "https://")):
                continue
            assert "../shared" not in target and (page.parent / target).exists(), f"{page.relative_to(ROOT)} links to {target}"
