"""docs/quantization.md against the code: its bytes table is what the memory models compute."""

from __future__ import annotations

from pathlib import Path

from avatarstream.families import quantized_bytes

PAGE = Path(__file__).parents[2] / "docs" / "quantization.md"


def _between(text: str, start: str, end: str) -> str:
    return text[text.index(start) : text.index(end)].split("\n", 1)[1].strip()


def test_the_bytes_table_is_what_the_models_compute() -> None:
    table = _between(PAGE.read_text(), "<!-- bytes:", "<!-- /bytes -->")
    assert table == quantized_bytes.markdown(), "docs/quantization.md's bytes table is out of date: paste python -m avatarstream.families.quantized_bytes"
