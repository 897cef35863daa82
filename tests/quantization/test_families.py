"""``--quantize`` and ``--quantize-modules`` as each family offers them: which modules, what the report says, the errors,
and the parallel layouts a quantized LiveAvatar keeps bit for bit (sp=2 and steps=2 over gloo, fp8 caches too)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from avatarstream.errors import InputError
from avatarstream.families.registry import load_family, options_class
from avatarstream.runtime.quantize import is_quantized

FAMILIES = {
    "demo-tiny": ("a2v_dit", "sr_dit", "text_encoder"),
    "infinitetalk": ("dit", "text_encoder"),
    "liveavatar": ("dit", "text_encoder"),
    "flashhead": ("dit",),
}
SPEECH = Path(__file__).parents[1] / "fixtures" / "liveavatar-tiny" / "cases" / "speech.wav"


def weights(name: str, tiny_original: object, tiny_liveavatar: Path, tiny_flashhead: Path) -> Path | None:
    return {"demo-tiny": None, "infinitetalk": Path(str(tiny_original.base)).parent, "liveavatar": tiny_liveavatar, "flashhead": tiny_flashhead}[name]


def quantized_modules(family: object) -> set[str]:
    modules = family.modules
    return {name for name, m in modules.items() if any(is_quantized(p) for p in m.network.parameters())}


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_the_dits_and_text_encoder_by_default_and_others_on_request(name: str, tiny_original: object, tiny_liveavatar: Path, tiny_flashhead: Path) -> None:
    root = weights(name, tiny_original, tiny_liveavatar, tiny_flashhead)
    assert quantized_modules(load_family(name, root)) == set()  # nothing unless asked
    family = load_family(name, root, {"quantize": "int8"})
    assert quantized_modules(family) == set(FAMILIES[name])
    assert family.weights.endswith("; quantized: int8 weights (weight-only): " + ", ".join(FAMILIES[name]))
    chosen = load_family(name, root, {"quantize": "fp8", "quantize_modules": "audio_encoder"})
    assert quantized_modules(chosen) == {"audio_encoder"}
    assert chosen.weights.endswith("fp8 weights (weight-only): audio_encoder")  # the CPU has no fp8 matmuls


def test_mistakes_are_one_line_each(tiny_liveavatar: Path) -> None:
    with pytest.raises(InputError, match="--quantize-modules names vea, which this model does not have; its modules are: dit, vae"):
        load_family("liveavatar", tiny_liveavatar, {"quantize": "int8", "quantize_modules": "dit,vea"})
    with pytest.raises(InputError, match="--quantize-modules needs --quantize int8 or fp8"):
        load_family("liveavatar", tiny_liveavatar, {"quantize_modules": "dit"})
    with pytest.raises(InputError, match="module 'vae' has no linear layers to quantize"):
        load_family("liveavatar", tiny_liveavatar, {"quantize": "int8", "quantize_modules": "vae"})
    with pytest.raises(InputError, match="--quantize must be one of int8, fp8; got 'int4'"):
        options_class("liveavatar")(quantize="int4")


def test_the_shipped_demo_weights_still_pick_the_shipped_avatar_when_quantized() -> None:
    plain, quantized = load_family("demo"), load_family("demo", None, {"quantize": "int8"})
    np.testing.assert_array_equal(quantized.reference(None), plain.reference(None))


def _frames(folder: Path) -> np.ndarray:
    return np.stack([np.asarray(Image.open(p)) for p in sorted(folder.glob("*.png"))])


def test_quantized_weights_and_fp8_caches_split_over_sp_and_steps_as_one_process(tiny_liveavatar: Path, tmp_path: Path) -> None:
    """The CLI, one process against ``--nproc 2`` with ``sp=2`` and with ``steps=2``: the same frames."""
    exe = str(Path(sys.executable).with_name("avatarstream"))
    common = ["--model", "liveavatar", "--weights", str(tiny_liveavatar), "--size", "64x64", "--steps", "2", "--cache-blocks", "1",
              "--quantize", "int8", "--kv-cache-dtype", "fp8", "--audio", str(SPEECH), "--threads", "1"]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if k not in ("LOCAL_RANK", "RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")}
    runs = {"one": [], "sp": ["--nproc", "2", "--parallel", "sp=2"], "steps": ["--nproc", "2", "--parallel", "steps=2"]}
    for run, layout in runs.items():
        out = tmp_path / run
        done = subprocess.run([exe, "render", *layout, *common, "--frames", str(out), "--out", str(tmp_path / f"{run}.mp4")], env=env,
                              check=False, capture_output=True, text=True, timeout=300)  # fmt: skip
        assert done.returncode == 0, done.stderr[-3000:]
    one = _frames(tmp_path / "one")
    assert len(one) > 24
    for run in ("sp", "steps"):
        np.testing.assert_array_equal(_frames(tmp_path / run), one)
