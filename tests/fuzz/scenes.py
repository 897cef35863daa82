"""Real weights folders for the fuzz targets to damage one file of: each target overwrites a single file with the fuzzer's
bytes and loads the folder, so an input reaches every check behind the file's first one.

Each is laid out once per folder (the tiny checkpoints the tests use: the InfiniteTalk golden set's, and random tiny
InfiniteTalk (Diffusers layout) and LiveAvatar ones) and copied, never linked: a loader refuses a link that leads outside.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from avatarstream.families.demo_weights import FORMAT_KEY, FORMAT_VERSION
from avatarstream.models.demo import DemoConfig

GOLDEN_WEIGHTS = Path(__file__).parents[1] / "fixtures" / "infinitetalk-tiny" / "weights"


def infinitetalk_original(folder: Path) -> Path:
    """The golden set's tiny InfiniteTalk checkpoint (original Wan layout), copied to ``folder/it-original``."""
    root = folder / "it-original"
    if not root.is_dir():
        shutil.copytree(GOLDEN_WEIGHTS, root)
        for path in root.rglob("*"):
            path.chmod(0o755 if path.is_dir() else 0o644)
    return root


def infinitetalk_diffusers(folder: Path) -> Path:
    """A random tiny InfiniteTalk checkpoint in the Diffusers layout, at ``folder/it-diffusers``."""
    from avatarstream.families.infinitetalk.tiny import write_tiny_checkpoint

    root = folder / "it-diffusers"
    if not root.is_dir():
        write_tiny_checkpoint(root, "diffusers", seed=3)
    return root


def liveavatar(folder: Path) -> Path:
    """A random tiny LiveAvatar checkpoint (Wan2.2-S2V-14B/ and LiveAvatar/), at ``folder/liveavatar``."""
    from avatarstream.families.liveavatar.tiny import write_tiny_checkpoint

    root = folder / "liveavatar"
    if not root.is_dir():
        write_tiny_checkpoint(root, seed=5)
    return root


def demo(folder: Path) -> Path:
    """A demo weights folder's config.json (demo-tiny's sizes) at ``folder/demo``: the config is all its reader opens."""
    root = folder / "demo"
    root.mkdir(parents=True, exist_ok=True)
    (root / "config.json").write_text(json.dumps({FORMAT_KEY: FORMAT_VERSION, **DemoConfig.tiny().to_dict()}, indent=1))
    return root
