"""Fixtures shared across test folders: the InfiniteTalk golden set and tiny checkpoints in both download layouts."""

from __future__ import annotations

from pathlib import Path

import pytest

from avatarstream.families.infinitetalk.layout import WeightsLayout

GOLDEN = Path(__file__).parent / "fixtures" / "infinitetalk-tiny"


@pytest.fixture(scope="session")
def golden_dir() -> Path:
    """The golden set made with the reference implementation (copied into the repo from the shared fixtures)."""
    return GOLDEN


def _tiny(tmp_path_factory: pytest.TempPathFactory, layout: str) -> WeightsLayout:
    from avatarstream.families.infinitetalk.tiny import write_tiny_checkpoint

    return write_tiny_checkpoint(tmp_path_factory.mktemp(f"tiny-{layout}"), layout, seed=7)  # type: ignore[arg-type]


@pytest.fixture(scope="session")
def tiny_original(tmp_path_factory: pytest.TempPathFactory) -> WeightsLayout:
    return _tiny(tmp_path_factory, "original")


@pytest.fixture(scope="session")
def tiny_diffusers(tmp_path_factory: pytest.TempPathFactory) -> WeightsLayout:
    return _tiny(tmp_path_factory, "diffusers")


@pytest.fixture(scope="session")
def tiny_liveavatar(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The root of a random tiny LiveAvatar checkpoint (Wan2.2-S2V-14B/ and LiveAvatar/ as downloaded)."""
    from avatarstream.families.liveavatar.tiny import write_tiny_checkpoint

    root = tmp_path_factory.mktemp("tiny-liveavatar")
    write_tiny_checkpoint(root, seed=5)
    return root


@pytest.fixture(scope="session")
def tiny_flashhead(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The root of a random tiny FlashHead Pro checkpoint (SoulX-FlashHead-1_3B/ and wav2vec2-base-960h/ as downloaded)."""
    from avatarstream.families.flashhead.tiny import write_tiny_checkpoint

    return write_tiny_checkpoint(tmp_path_factory.mktemp("tiny-flashhead"), seed=3, variant="pro")
