"""`avatarstream families` and a wrong weights folder answer before torch or any model code is imported, from the CLI and
from ``avatarstream.render``, for the built-in families and for a light plug-in.

Each case runs in a fresh interpreter and reports what it imported: no wall clock, so a busy machine cannot fail it,
and a heavy import cannot pass it. The installed test plug-in (colourbars) is listed too: its class module is light.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from avatarstream.families.builtin import BUILTIN

#: What listing or checking must not import: torch and the libraries on it, and every built-in family's model code.
HEAVY = ("torch", "diffusers", "transformers", *sorted({b.family.partition(":")[0] for b in BUILTIN.values()}))

RUN = """
import json, sys
{call}
heavy = [m for m in {heavy!r} if m in sys.modules] + [m for m in sys.modules if m.startswith(("avatarstream.models.", "avatarstream.stages."))]
print(json.dumps({{"said": said, "heavy": heavy}}))
"""
CLI = """
from avatarstream.cli.main import main
said = main({argv!r})
"""
API = """
import avatarstream
from avatarstream.errors import InputError
said = []
for kwargs in {calls!r}:
    try:
        avatarstream.render(out={out!r}, **kwargs)
    except InputError as exc:
        said.append(str(exc))
"""

LIGHT_PLUGIN = '''
"""A plug-in family whose module loads no torch, with a weights check of its own."""
from avatarstream.plugin import FamilyOptions, InputError

class LightOptions(FamilyOptions):
    pass

class LightFamily:
    Options = LightOptions
    summary = "a plug-in whose class module is light"
    weights_help = "a folder holding light.txt"

    @staticmethod
    def check_weights(weights, options):
        if weights is None or not (weights / "light.txt").is_file():
            raise InputError(f"no light.txt in {weights}; put light.txt there")

    @classmethod
    def load(cls, weights, options, *, device, seed=0):
        cls.check_weights(weights, options)
        raise AssertionError("a folder without light.txt never gets here")
'''


def _run(code: str, tmp_path: Path, site: Path | None = None) -> tuple[dict, str, str]:
    """(what ``code`` set ``said`` to and the heavy modules it imported, its stdout, its stderr); ``site``: a folder
    on the path, for an installed plug-in."""
    script = RUN.format(call=textwrap.dedent(code), heavy=HEAVY)
    env = dict(os.environ)
    if site is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(site), env.get("PYTHONPATH")]))
    done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1]), done.stdout, done.stderr


@pytest.fixture
def empty(tmp_path: Path) -> Path:
    folder = tmp_path / "empty"
    folder.mkdir()
    return folder


def test_families_lists_the_built_in_ones_without_their_model_code(tmp_path: Path) -> None:
    report, out, _ = _run(CLI.format(argv=["families"]), tmp_path)
    assert report == {"said": 0, "heavy": []}, report
    for name, builtin in BUILTIN.items():
        assert f"{name}\n  {builtin.summary}\n  weights: {builtin.weights_help}" in out


@pytest.mark.parametrize(
    ("argv", "error"),
    [
        (["render", "--model", "liveavatar", "--weights", "{empty}"], "error: {empty}/Wan2.2-S2V-14B has no config.json; download Wan2.2-S2V-14B there"),
        (["render", "--model", "infinitetalk", "--weights", "{empty}"], "error: no Wan base model in {empty}; expected one of"),
        (["render", "--model", "infinitetalk"], "error: the infinitetalk model needs --weights ROOT"),
        (["serve", "--model", "liveavatar", "--weights", "{empty}"], "error: {empty}/Wan2.2-S2V-14B has no config.json"),
        (["bench", "--model", "infinitetalk", "--weights", "{empty}"], "error: no Wan base model in {empty}"),
        (["render", "--model", "demo", "--weights", "{empty}"], "error: no config.json in weights folder {empty}"),
        (["render", "--model", "demo-tiny", "--weights", "{empty}/nowhere"], "error: weights folder {empty}/nowhere not found"),
    ],
    ids=["render liveavatar", "render infinitetalk", "render infinitetalk without --weights", "serve", "bench", "render demo", "render demo-tiny"],
)
def test_a_wrong_weights_folder_is_one_line_before_torch_loads(argv: list[str], error: str, empty: Path, tmp_path: Path) -> None:
    report, _, err = _run(CLI.format(argv=[a.format(empty=empty) for a in argv]), tmp_path)
    assert report == {"said": 2, "heavy": []}, report
    assert err.startswith(error.format(empty=empty)) and err.count("\n") == 1, err


def test_python_callers_get_the_same_errors_before_the_model_code_loads(empty: Path, tmp_path: Path) -> None:
    calls = [
        {"model": "liveavatar", "weights": str(empty)},
        {"reference": str(tmp_path / "missing.png")},
        {"model_options": {"no_such_option": 1}},
        {"seed": -1},
    ]
    report, _, _ = _run(API.format(calls=calls, out=str(tmp_path / "out.mp4")), tmp_path)
    assert len(report["said"]) == len(calls), report
    assert report["said"][0].startswith(f"{empty}/Wan2.2-S2V-14B has no config.json"), report
    assert [m for m in report["heavy"] if m != "torch"] == [], report  # avatarstream.render's module imports torch itself
    assert not (tmp_path / "out.mp4").exists()


def test_a_light_plug_in_is_listed_and_checked_without_torch(empty: Path, tmp_path: Path) -> None:
    site = tmp_path / "site"
    (site / "lightplug-0.dist-info").mkdir(parents=True)
    (site / "lightplug-0.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: lightplug\nVersion: 0\n")
    (site / "lightplug-0.dist-info" / "entry_points.txt").write_text("[avatarstream.families]\nlight = light_family:LightFamily\n")
    (site / "light_family.py").write_text(LIGHT_PLUGIN)
    report, out, _ = _run(CLI.format(argv=["families"]), tmp_path, site)
    assert report == {"said": 0, "heavy": []} and "light  (from lightplug)\n  a plug-in whose class module is light" in out, (report, out)
    report, _, err = _run(CLI.format(argv=["render", "--model", "light", "--weights", str(empty)]), tmp_path, site)
    assert report == {"said": 2, "heavy": []} and err == f"error: no light.txt in {empty}; put light.txt there\n", (report, err)
