"""``avatarstream parity DIR --frames OUT`` on a whole-video set: the product path reproduces the reference CLI's frames."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from avatarstream.cli.main import main
from avatarstream.families.infinitetalk.buckets import nearest_bucket
from avatarstream.parity.fixture import GoldenSet
from avatarstream.parity.video import frame_checks, golden_frames
from avatarstream.publish.frames import frame_paths

VIDEO_SET = Path(__file__).parents[1] / "fixtures" / "infinitetalk-video"


def read_frames(folder: Path) -> np.ndarray:
    return np.stack([np.asarray(Image.open(p)) for p in frame_paths(folder)])


@pytest.fixture(scope="module")
def parity_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict]]:
    out = tmp_path_factory.mktemp("video-parity")
    assert main(["parity", str(VIDEO_SET), "--frames", str(out / "frames"), "--json", str(out / "parity.json")]) == 0
    return out / "frames", json.loads((out / "parity.json").read_text())


def test_the_product_path_holds_the_sets_tolerances(parity_run: tuple[Path, list[dict]]) -> None:
    frames, rows = parity_run
    spec = json.loads((VIDEO_SET / "golden.json").read_text())
    by_name = {r["name"]: r for r in rows}
    assert set(by_name) == {"psnr_db", "worst_frame_psnr_db", "fraction_of_values_differing", "abs_mean_signed_difference"}
    assert all(r["passed"] for r in rows), rows
    assert by_name["psnr_db"]["tolerance"] == spec["tolerance"]["frames_psnr_db_min"]
    assert len(frame_paths(frames)) == spec["settings"]["frames"]


def test_render_at_reference_fidelity_makes_the_parity_frames(parity_run: tuple[Path, list[dict]], tmp_path: Path) -> None:
    """The CLI a user runs, given the reference CLI's settings as flags, writes exactly the frames parity checked."""
    s = json.loads((VIDEO_SET / "golden.json").read_text())["settings"]
    inputs = json.loads((VIDEO_SET / "cases" / "input.json").read_text())
    weights = VIDEO_SET / "weights"
    argv = [
        "render", "--model", "infinitetalk", "--fidelity", "reference", "--dtype", "fp32", "--device", "cpu", "--out", "-",
        "--frames", str(tmp_path / "frames"), "--audio", str(VIDEO_SET / inputs["cond_audio"]["person1"]),
        "--reference", str(VIDEO_SET / inputs["cond_video"]), "--prompt", inputs["prompt"], "--seed", str(s["seed"]),
        "--base", str(weights / "Wan2.1-I2V-14B-480P"), "--adapter", str(weights / "InfiniteTalk" / "single" / "infinitetalk.safetensors"),
        "--audio-encoder", str(weights / "chinese-wav2vec2-base"), "--chunk-frames", str(s["frame_num"]),
        "--motion-frames", str(s["motion_frame"]), "--steps", str(s["sample_steps"]), "--shift", str(s["shift"]),
        "--text-guidance", str(s["text_guide_scale"]), "--audio-guidance", str(s["audio_guide_scale"]),
        "--color-correction", str(s["color_correction_strength"]), "--size", f"{s['size_bucket'][1]}x{s['size_bucket'][0]}", "--no-progress",
    ]  # fmt: skip
    assert main(argv) == 0
    np.testing.assert_array_equal(read_frames(tmp_path / "frames"), read_frames(parity_run[0]))


def test_a_set_without_reference_frames_renders_and_says_so(parity_run: tuple[Path, list[dict]], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bare = tmp_path / "set"
    shutil.copytree(VIDEO_SET, bare, ignore=shutil.ignore_patterns("frames.safetensors"))
    assert main(["parity", str(bare), "--frames", str(tmp_path / "frames")]) == 0
    assert "nothing to compare" in capsys.readouterr().out
    np.testing.assert_array_equal(read_frames(tmp_path / "frames"), read_frames(parity_run[0]))
    assert main(["parity", str(bare), "--frames", str(tmp_path / "frames")]) == 2  # a used folder is refused
    assert main(["parity", str(bare)]) == 2  # a whole-video set needs --frames


def test_the_checks_catch_a_rounding_conversion(parity_run: tuple[Path, list[dict]]) -> None:
    """Frames one value brighter in 5 % of places (what rounding instead of truncating does) fail the set's limits."""
    gs = GoldenSet.open(VIDEO_SET)
    golden = golden_frames(gs)
    assert golden is not None
    brighter = golden.copy()
    flat = brighter.reshape(-1)
    picked = np.random.default_rng(0).choice(flat.size, flat.size // 20, replace=False)
    flat[picked] = np.maximum(flat[picked].astype(np.int16) - 1, 0).astype(np.uint8)  # ours then read one value above
    failed = {c.name for c in frame_checks(gs, parity_run[0], brighter) if not c.passed}
    assert failed == {"fraction_of_values_differing", "abs_mean_signed_difference"}


def test_size_buckets_are_the_reference_clis() -> None:
    assert nearest_bucket(158, 100) == (768, 512)  # ratio 1.58: bucket "1.50"
    assert nearest_bucket(480, 480) == (640, 640)
    assert nearest_bucket(100, 400) == (320, 1216)


def test_without_a_size_the_reference_fidelity_takes_the_images_bucket() -> None:
    from avatarstream.families.registry import load_family

    weights = VIDEO_SET / "weights"
    load = {"base": weights / "Wan2.1-I2V-14B-480P", "adapter": weights / "InfiniteTalk" / "single", "audio_encoder": weights / "chinese-wav2vec2-base"}
    family = load_family("infinitetalk", None, load)  # type: ignore[arg-type]
    image = family.reference(VIDEO_SET / "cases" / "ref_image.png", {"fidelity": "reference"})
    assert image.shape == (768, 512, 3)  # 158x100 (h x w): bucket "1.50"; the video is the reference's size
    assert family.reference(VIDEO_SET / "cases" / "ref_image.png", {"fidelity": "reference", "size": (32, 48)}).shape == (48, 32, 3)
