"""Every install line in the README, docs/ and examples/ works as written, offline: avatarstream is on no package index,
so each names the clone (``-e '.[extra]'``), a git URL or a wheel ``make dist`` builds. Each form found is run with
``pip install --dry-run --no-index`` against this environment (which holds the extras' pinned dependencies already)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md")), *sorted((ROOT / "examples").glob("*.py"))]
INSTALL = re.compile(r"pip install ([^\n#`]*)")
#: The forms that work without an index; group 1 is the extra.
FORMS = {
    "clone": re.compile(r"-c requirements/lock\.txt -e '\.\[(\w+)\]'"),
    "git": re.compile(r"-c requirements/lock\.txt 'avatarstream\[(\w+)\] @ git\+file:///path/to/avatarstream'"),
    "wheel": re.compile(r"-c requirements/lock\.txt 'dist/(avatarstream-[\w.]+-py3-none-any\.whl)\[(\w+)\]'"),
}


def _documented() -> list[tuple[str, str]]:
    """(where, the arguments of ``pip install``) for every line that installs avatarstream itself."""
    found = []
    for path in DOCUMENTS:
        for number, line in enumerate(path.read_text().splitlines(), 1):
            for match in INSTALL.finditer(line):
                arguments = match.group(1).strip()
                if "avatarstream" in arguments or ".[" in arguments:
                    found.append((f"{path.relative_to(ROOT)}:{number}", arguments))
    return found


def test_every_install_line_takes_a_form_that_needs_no_index() -> None:
    documented = _documented()
    assert len(documented) >= 4  # the forms in docs/setup.md and the agents' and fleet's lines
    bad = [f"{where}: pip install {arguments}" for where, arguments in documented if not any(form.fullmatch(arguments) for form in FORMS.values())]
    assert bad == [], "install lines that need a package index or the lock file's pins:\n" + "\n".join(bad)


def _dry_run(requirement: list[str]) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "pip", "install", "--dry-run", "--no-index", "--no-build-isolation", "-c", "requirements/lock.txt", *requirement]
    return subprocess.run(command, check=False, cwd=ROOT, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("form", list(FORMS))
def test_each_documented_form_installs_offline(form: str, tmp_path: Path) -> None:
    lines = [arguments for _, arguments in _documented() if FORMS[form].fullmatch(arguments)]
    assert lines, f"no install line of the {form} form is documented"
    match = FORMS[form].fullmatch(lines[0])
    assert match is not None
    if form == "clone":
        requirement = ["-e", f".[{match.group(1)}]"]
    elif form == "git":
        requirement = [f"avatarstream[{match.group(1)}] @ git+file://{ROOT}"]
    else:  # what `make dist` runs, into a folder of the test's own
        subprocess.run(
            [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation", "--wheel-dir", str(tmp_path), "."],
            cwd=ROOT,
            check=True,
            timeout=300,
        )
        wheel = tmp_path / match.group(1)
        assert wheel.is_file(), f"the docs name {match.group(1)}, but `make dist` builds {[p.name for p in tmp_path.glob('*.whl')]}"
        requirement = [f"{wheel}[{match.group(2)}]"]
    run = _dry_run(requirement)
    assert run.returncode == 0, run.stderr[-2000:]
    assert "Would install avatarstream-" in run.stdout
