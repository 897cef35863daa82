"""The flashhead family on tiny random checkpoints (Pro and Lite): exact frame counts, the same seed gives the same video."""

from __future__ import annotations

from pathlib import Path

import av
import numpy as np
import pytest

import avatarstream
from avatarstream import load_family
from avatarstream.errors import InputError
from avatarstream.families.flashhead.layout import resolve
from avatarstream.families.flashhead.tiny import write_tiny_checkpoint
from avatarstream.sources.pcm import PcmBlock

RATE = 16000
#: The presets' chunks (33 frames, 28 new for Pro and 24 for Lite) and 8 s audio buffer, at a tiny size.
OPTIONS = {"size": [64, 64]}


@pytest.fixture(scope="module", params=["pro", "lite"])
def tiny(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    variant: str = request.param
    return variant, write_tiny_checkpoint(tmp_path_factory.mktemp(f"tiny-flashhead-{variant}"), seed=7, variant=variant)


def speech(seconds: float) -> list[PcmBlock]:
    t = np.arange(round(seconds * RATE)) / RATE
    samples = (0.3 * np.sin(2 * np.pi * 180 * t) * (0.6 + 0.4 * np.sin(2 * np.pi * 4 * t))).astype(np.float32)
    return [PcmBlock(samples[None, i : i + RATE // 5], RATE) for i in range(0, samples.size, RATE // 5)]


def frames(path: Path) -> np.ndarray:
    with av.open(str(path)) as container:
        return np.stack([f.to_ndarray(format="rgb24") for f in container.decode(video=0)])


def test_renders_the_exact_frame_count_and_the_same_seed_gives_the_same_video(tiny: tuple[str, Path], tmp_path: Path) -> None:
    variant, weights = tiny
    family = load_family("flashhead", weights, {"preset": variant})
    common = {"model": family, "model_options": OPTIONS, "threads": 1, "preset": "ultrafast"}
    first = avatarstream.render(speech(2.32), out=tmp_path / "a.mp4", seed=3, **common)
    avatarstream.render(speech(2.32), out=tmp_path / "b.mp4", seed=3, **common)
    avatarstream.render(speech(2.32), out=tmp_path / "c.mp4", seed=4, **common)
    new = {"pro": 28, "lite": 24}[variant]  # 33-frame chunks less 5 (Pro) or 9 (Lite) motion frames
    assert first.report["frames"] == 58 and first.report["num_chunks"] == -(-58 // new)
    assert first.report["settings"]["new_frames"] == new and first.report["settings"]["variant"] == variant
    a, b, c = frames(tmp_path / "a.mp4"), frames(tmp_path / "b.mp4"), frames(tmp_path / "c.mp4")
    assert len(a) == 58 and a.shape[1:] == (64, 64, 3)
    assert np.array_equal(a, b), "same seed: the same video (Lite's posterior samples come from the session's generator too)"
    assert not np.array_equal(a, c)
    assert first.report["warnings"] and "random" in first.report["warnings"][0]


def test_a_missing_variant_or_a_size_the_vae_cannot_take_is_one_line(tiny: tuple[str, Path]) -> None:
    variant, weights = tiny
    other = "lite" if variant == "pro" else "pro"
    with pytest.raises(InputError, match=f"the {other} variant"):
        resolve(weights, variant=other)
    family = load_family("flashhead", weights, {"preset": variant})
    with pytest.raises(InputError, match="--size must be"):
        family.build(family.Options.parse({"size": [72, 64]}))
    with pytest.raises(InputError, match="--chunk-frames must be 1 \\+"):
        family.build(family.Options.parse({"chunk_frames": 34}))
