"""A weights folder is a sandbox: loaders open only files that resolve inside it (or a Hugging Face cache's blobs/),
run no code from it, and turn malformed files into one InputError naming the file."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import save_file
from torch import nn

from avatarstream.components.wan.load_wav2vec2 import wav2vec2_config
from avatarstream.errors import InputError
from avatarstream.families.demo import DemoFamily
from avatarstream.models.demo import DemoConfig
from avatarstream.weights.files import ShardedCheckpoint
from avatarstream.weights.meta_load import MetaLoader, empty_weights
from avatarstream.weights.sandbox import inside

OUTSIDE = "outside the weights folder"


def _sharded(folder: Path, names: dict[str, object]) -> Path:
    """``folder`` with one small shard per distinct name and an index mapping tensor -> shard name."""
    folder.mkdir(parents=True, exist_ok=True)
    for i, name in enumerate(names.values()):
        if isinstance(name, str) and not Path(name).is_absolute():
            save_file({f"t{i}": torch.zeros(2)}, str(folder / name))
    (folder / "model.safetensors.index.json").write_text(json.dumps({"weight_map": names}))
    return folder


def _open_error(folder: Path) -> str:
    with pytest.raises(InputError) as info:
        ShardedCheckpoint.open(folder, "model")
    return str(info.value)


def test_inside_accepts_files_and_a_symlinked_folder(tmp_path: Path) -> None:
    real = tmp_path / "disk" / "model"
    real.mkdir(parents=True)
    (real / "a.bin").write_bytes(b"x")
    (tmp_path / "link").symlink_to(real)  # a download kept on another disk, linked as a whole
    assert inside(tmp_path / "link", tmp_path / "link" / "a.bin") == tmp_path / "link" / "a.bin"


def test_index_traversal_is_refused(tmp_path: Path) -> None:
    (tmp_path / "elsewhere").mkdir()
    save_file({"t": torch.zeros(2)}, str(tmp_path / "elsewhere" / "x.safetensors"))
    folder = _sharded(tmp_path / "model", {"a": "model-1.safetensors", "b": "../elsewhere/x.safetensors"})
    message = _open_error(folder)
    assert OUTSIDE in message and "x.safetensors" in message and str(folder) in message


def test_absolute_shard_name_is_refused(tmp_path: Path) -> None:
    target = tmp_path / "x.safetensors"
    save_file({"t": torch.zeros(2)}, str(target))
    message = _open_error(_sharded(tmp_path / "model", {"a": str(target)}))
    assert "absolute path" in message and "model.safetensors.index.json" in message


@pytest.mark.parametrize(
    ("index", "words"),
    [
        ({"weight_map": ["model-1.safetensors"]}, "a 'weight_map' that is a list"),
        ({"weight_map": {"a": 7}}, "names shard 7, not a file name"),
        ({"weight_map": {"a": ""}}, "not a file name"),
        (["model-1.safetensors"], "no 'weight_map'"),
    ],
)
def test_malformed_index_is_one_error(tmp_path: Path, index: object, words: str) -> None:
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "model.safetensors.index.json").write_text(json.dumps(index))
    message = _open_error(folder)
    assert words in message and "model.safetensors.index.json" in message


def test_symlinked_shard_pointing_outside_is_refused(tmp_path: Path) -> None:
    folder = _sharded(tmp_path / "model", {"a": "model-1.safetensors"})
    outside = tmp_path / "secret.safetensors"
    save_file({"t": torch.zeros(2)}, str(outside))
    (folder / "model-1.safetensors").unlink()
    (folder / "model-1.safetensors").symlink_to(outside)
    message = _open_error(folder)
    assert OUTSIDE in message and "secret.safetensors" in message


def _hf_cache(tmp_path: Path, source: Path, repo: str = "models--org--demo") -> Path:
    """``source``'s files laid out as huggingface_hub caches them: snapshot links into ../../blobs."""
    blobs = tmp_path / "hub" / repo / "blobs"
    snapshot = tmp_path / "hub" / repo / "snapshots" / "0123abc"
    blobs.mkdir(parents=True)
    snapshot.mkdir(parents=True)
    for i, file in enumerate(sorted(source.iterdir())):
        blob = blobs / f"{i:040x}"
        file.rename(blob)
        (snapshot / file.name).symlink_to(Path("..") / ".." / "blobs" / blob.name)
    return snapshot


def test_hugging_face_cache_layout_is_accepted(tmp_path: Path) -> None:
    folder = _sharded(tmp_path / "src", {"a": "model-1.safetensors", "b": "model-2.safetensors"})
    snapshot = _hf_cache(tmp_path, folder)
    checkpoint = ShardedCheckpoint.open(snapshot, "model")
    assert sorted(key for _, shard in checkpoint.shards() for key in shard) == ["t0", "t1"]


def test_hugging_face_link_into_another_repository_is_refused(tmp_path: Path) -> None:
    other = tmp_path / "hub" / "models--org--other" / "blobs"
    other.mkdir(parents=True)
    save_file({"t": torch.zeros(2)}, str(other / "f00d"))
    folder = _sharded(tmp_path / "src", {"a": "model-1.safetensors"})
    snapshot = _hf_cache(tmp_path, folder)
    (snapshot / "model-1.safetensors").unlink()
    (snapshot / "model-1.safetensors").symlink_to(Path("..") / ".." / ".." / "models--org--other" / "blobs" / "f00d")
    assert OUTSIDE in _open_error(snapshot)


def test_demo_weights_load_from_a_hugging_face_cache(tmp_path: Path) -> None:
    DemoFamily.random(DemoConfig.tiny()).save(tmp_path / "src")
    snapshot = _hf_cache(tmp_path, tmp_path / "src")
    assert DemoFamily.load(snapshot).config == DemoConfig.tiny()


def test_demo_module_linked_outside_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "weights"
    DemoFamily.random(DemoConfig.tiny()).save(folder)
    (folder / "vae.safetensors").rename(tmp_path / "vae.safetensors")
    (folder / "vae.safetensors").symlink_to(tmp_path / "vae.safetensors")
    with pytest.raises(InputError, match=f"vae.safetensors leads to .*, {OUTSIDE}"):
        DemoFamily.load(folder)


def test_wav2vec2_config_that_is_a_list_is_one_error(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(json.dumps([{"model_type": "wav2vec2"}]))
    with pytest.raises(InputError, match=r"config.json holds a JSON list, not an object"):
        wav2vec2_config(tmp_path)


def test_integer_tensor_for_a_float_weight_is_one_error(tmp_path: Path) -> None:
    with empty_weights():
        network = nn.Linear(2, 2)
    loader = MetaLoader(network, "test network", torch.float32)
    with pytest.raises(InputError, match=r"shard.safetensors holds weight as torch.int32, an integer type"):
        loader.load({"weight": torch.zeros(2, 2, dtype=torch.int32)}, tmp_path / "shard.safetensors")


def test_auto_map_tokenizer_runs_no_code_and_does_not_prompt(tmp_path: Path) -> None:
    """stdin is closed, as for a server: an ``auto_map`` must neither ask (a prompt would fail or hang) nor import the folder's module."""
    from avatarstream.components.wan.tiny_text_encoder import umt5_tokenizer

    folder = tmp_path / "tokenizer"
    umt5_tokenizer().save_pretrained(folder)
    config = json.loads((folder / "tokenizer_config.json").read_text())
    config.update(auto_map={"AutoTokenizer": ["evil.EvilTokenizer", None]}, tokenizer_class="EvilTokenizer")
    (folder / "tokenizer_config.json").write_text(json.dumps(config))
    (folder / "evil.py").write_text(
        "from pathlib import Path\nPath(__file__).with_name('MARKER').touch()\nfrom transformers import T5Tokenizer\nclass EvilTokenizer(T5Tokenizer): ...\n"
    )
    script = (
        "import sys; from pathlib import Path\n"
        "from avatarstream.errors import InputError\n"
        "from avatarstream.components.wan.load_text_encoder import _load_tokenizer\n"
        "try:\n    _load_tokenizer(Path(sys.argv[1]))\nexcept InputError as e:\n    print('InputError:', e)\n"
    )
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    result = subprocess.run(
        [sys.executable, "-c", script, str(folder)], check=False, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=300, env=env
    )
    assert result.returncode == 0, result.stderr
    assert "InputError:" in result.stdout and "auto_map" in result.stdout and "tokenizer_config.json" in result.stdout
    assert not (folder / "MARKER").exists()


def test_a_download_folder_found_under_the_root_must_stay_inside_it(tmp_path: Path) -> None:
    from avatarstream.families.infinitetalk.layout import ADAPTER_FILE, AUDIO_ENCODER_DIR, BASE_NAMES, resolve

    root = tmp_path / "weights"
    (root / BASE_NAMES[0]).mkdir(parents=True)
    (root / ADAPTER_FILE).parent.mkdir(parents=True)
    (root / ADAPTER_FILE).write_bytes(b"")
    (tmp_path / "elsewhere").mkdir()
    (root / AUDIO_ENCODER_DIR).symlink_to(tmp_path / "elsewhere")
    with pytest.raises(InputError, match=f"{AUDIO_ENCODER_DIR} leads to .*elsewhere, {OUTSIDE}"):
        resolve(root)
