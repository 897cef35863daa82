"""Every broken or wrong weights folder gives one clear error naming the file and what is expected (exit code 2)."""

from __future__ import annotations

import json
import pickle
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file

from avatarstream.cli.main import main
from avatarstream.errors import InputError
from avatarstream.families.infinitetalk.layout import resolve
from avatarstream.families.infinitetalk.networks import InfiniteTalkNetworks

BASE = "Wan2.1-I2V-14B-480P"
SHARD1 = f"{BASE}/diffusion_pytorch_model-00001-of-00002.safetensors"


class Evil:
    """Anything full unpickling would construct; weights-only loading must refuse it."""


def _truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _edit_json(path: Path, **changes: object) -> None:
    path.write_text(json.dumps({**json.loads(path.read_text()), **changes}))


def _drop_tensor(root: Path) -> None:
    shard = root / SHARD1
    tensors = load_file(str(shard))
    del tensors["blocks.0.ffn.0.weight"]
    save_file(tensors, str(shard))
    index = root / BASE / "diffusion_pytorch_model.safetensors.index.json"
    spec = json.loads(index.read_text())
    del spec["weight_map"]["blocks.0.ffn.0.weight"]
    index.write_text(json.dumps(spec))


CASES: dict[str, tuple[Callable[[Path], None], str]] = {
    "no root": (lambda r: shutil.rmtree(r), "weights folder .* not found"),
    "no base folder": (lambda r: shutil.rmtree(r / BASE), "no Wan base model in"),
    "a shard is missing": (lambda r: (r / SHARD1).unlink(), "lists shards that are not in .*incomplete"),
    "a shard is truncated": (lambda r: _truncate(r / SHARD1), "cannot read .*00001-of-00002.safetensors.*truncated"),
    "a tensor is missing": (_drop_tensor, "lack 1 tensors \\(blocks.0.ffn.net.0.proj.weight\\)"),
    "config of another size": (lambda r: _edit_json(r / BASE / "config.json", dim=128, num_heads=8), "does not fit the InfiniteTalk DiT: wrong shapes"),
    "a text-to-video base": (lambda r: _edit_json(r / BASE / "config.json", model_type="t2v"), "Wan 't2v' model; InfiniteTalk needs the image-to-video base"),
    "another family's folder": (lambda r: (r / BASE / "config.json").write_text(json.dumps({"fps": 25, "image_size": 256})), "not the config of a Wan model"),
    "config is not JSON": (lambda r: (r / BASE / "config.json").write_text("{dim: 64"), "invalid .*config.json"),
    "no adapter": (lambda r: shutil.rmtree(r / "InfiniteTalk"), "audio adapter .*infinitetalk.safetensors not found"),
    "adapter for another audio encoder": (
        lambda r: _edit_json(r / "chinese-wav2vec2-base" / "config.json", num_hidden_layers=3),
        "expects 64 audio features per frame, but the audio encoder gives 3 layers x 32 = 96",
    ),
    "audio encoder without weights": (lambda r: (r / "chinese-wav2vec2-base" / "model.safetensors").unlink(), "no model.safetensors or pytorch_model.bin"),
    "audio encoder of another kind": (
        lambda r: _edit_json(r / "chinese-wav2vec2-base" / "config.json", model_type="hubert"),
        "'hubert' model; the audio encoder must be wav2vec2",
    ),
    "VAE missing": (lambda r: (r / BASE / "Wan2.1_VAE.pth").unlink(), "Wan2.1_VAE.pth not found"),
    "VAE truncated": (lambda r: _truncate(r / BASE / "Wan2.1_VAE.pth"), "cannot read .*Wan2.1_VAE.pth weights-only"),
    "VAE needs full unpickling": (lambda r: (r / BASE / "Wan2.1_VAE.pth").write_bytes(pickle.dumps({"w": Evil()})), "weights-only"),
    "VAE of another model": (lambda r: torch.save({"x": torch.zeros(1)}, r / BASE / "Wan2.1_VAE.pth"), "has no encoder.conv1.weight: it is not a Wan 2.1 VAE"),
}


@pytest.fixture
def weights(golden_dir: Path, tmp_path: Path) -> Path:
    root = tmp_path / "weights"
    shutil.copytree(golden_dir / "weights", root)
    for path in root.rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)
    return root


@pytest.mark.parametrize("case", list(CASES))
def test_bad_folder_gives_one_clear_error(case: str, weights: Path) -> None:
    breaks, message = CASES[case]
    breaks(weights)
    with pytest.raises(InputError, match=message):
        InfiniteTalkNetworks.load(resolve(weights), encoders=False)


def test_the_cli_exits_2_with_one_line(weights: Path, golden_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    golden = tmp_path / "golden"
    golden.mkdir()
    shutil.copy(golden_dir / "golden.json", golden / "golden.json")
    shutil.move(str(weights), golden / "weights")
    _truncate(golden / "weights" / SHARD1)
    assert main(["parity", str(golden)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: cannot read") and "00001-of-00002.safetensors" in err[0]
