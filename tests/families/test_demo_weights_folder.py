"""A demo weights folder names its format version; a folder of another version (or no folder) is one clear error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from avatarstream.errors import InputError
from avatarstream.families.demo import FORMAT_VERSION, SHIPPED_WEIGHTS, DemoFamily, DemoTinyFamily
from avatarstream.families.registry import load_family


@pytest.fixture
def saved(tmp_path: Path) -> Path:
    folder = tmp_path / "weights"
    DemoFamily.random(DemoTinyFamily.load(None).config).save(folder)
    return folder


def test_saved_and_shipped_folders_carry_the_version(saved: Path) -> None:
    assert json.loads((saved / "config.json").read_text())["format_version"] == FORMAT_VERSION
    assert json.loads((Path(str(SHIPPED_WEIGHTS)) / "config.json").read_text())["format_version"] == FORMAT_VERSION
    assert load_family("demo", saved).config == DemoTinyFamily.load(None).config


def test_a_folder_from_before_the_version_key_still_loads(saved: Path) -> None:
    config = json.loads((saved / "config.json").read_text())
    del config["format_version"]
    (saved / "config.json").write_text(json.dumps(config))
    load_family("demo", saved)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda c: {**c, "format_version": "1"}, r"has format version '1'"),
        (lambda c: [c], r"invalid .*config.json: expected a JSON object"),
    ],
)
def test_another_version_is_refused_by_name(saved: Path, edit, message: str) -> None:  # type: ignore[no-untyped-def]
    config = json.loads((saved / "config.json").read_text())
    (saved / "config.json").write_text(json.dumps(edit(config)))
    with pytest.raises(InputError, match=message):
        load_family("demo", saved)
