"""Property tests (hypothesis) of every reader of an untrusted weights folder: whatever JSON a config or an index holds and
whatever a safetensors header says, the reader returns a checked value or raises one InputError, never anything else,
and sizes nothing by the lie (a model that cannot fit is refused from its config, before allocation).

Each test starts from the real file of the tiny checkpoint and replaces some of its values with arbitrary JSON, so the
examples reach the checks behind the first one. Bounded for CI: a few dozen examples each, derandomized.
"""

from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path
from typing import Any

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from avatarstream.components.wan.load_vae import diffusers_vae_config
from avatarstream.components.wan.load_wav2vec2 import wav2vec2_config
from avatarstream.errors import InputError
from avatarstream.families.demo import _read_config
from avatarstream.families.infinitetalk.load_dit import dit_bytes, dit_checkpoint, read_adapter_config, read_dit_config
from avatarstream.models.demo import DemoConfig
from avatarstream.models.infinitetalk.config import AdapterConfig
from avatarstream.weights.files import ShardedCheckpoint, read_safetensors, safetensors_shapes
from avatarstream.weights.memory_check import require_fits

WEIGHTS = Path(__file__).parents[1] / "fixtures" / "infinitetalk-tiny" / "weights"
BASE = "Wan2.1-I2V-14B-480P"
FUZZ = settings(max_examples=50, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])

#: Numbers a hostile file would try: zero, negatives, huge, infinite, not-a-number, fractions, and small good ones.
NUMBERS = st.one_of(
    st.integers(-3, 3),
    st.sampled_from([0, 1, 2, 64, 10**6, 10**9, 2**63, -(2**31), 10**400]),
    st.floats(allow_nan=True, allow_infinity=True),
)
SCALARS = st.one_of(st.none(), st.booleans(), NUMBERS, st.text(max_size=8))
JSON = st.recursive(SCALARS, lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=6), inner, max_size=4)), max_leaves=12)


#: What a hostile or damaged file puts where a count belongs, drawn often (arbitrary JSON covers the rest).
NASTY = st.sampled_from([0, -1, 10**9, 10**6, float("inf"), float("nan"), 2.5, "40", [], [1], {}, None, True])


def _edits(keys: list[str]) -> st.SearchStrategy[dict[str, Any]]:
    """One to four of ``keys`` (or an unknown one) replaced by a nasty value or arbitrary JSON."""
    return st.dictionaries(st.sampled_from([*keys, "extra"]), st.one_of(NASTY, JSON), min_size=1, max_size=4)


def _write(path: Path, value: Any) -> None:
    path.write_text(json.dumps(value, allow_nan=True))


def _only_input_errors(read: Any) -> Any:
    try:
        return read()
    except InputError as err:
        assert "\n" not in str(err)
        return None


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("fuzz") / "weights"
    shutil.copytree(WEIGHTS, root)
    for path in root.rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)
    return root


DIT_KEYS = ["dim", "num_heads", "num_layers", "ffn_dim", "freq_dim", "in_dim", "out_dim", "text_dim", "text_len", "eps", "model_type"]


@FUZZ
@given(edits=_edits(DIT_KEYS), whole=st.one_of(st.none(), st.none(), JSON))
def test_dit_config(root: Path, edits: dict[str, Any], whole: Any) -> None:
    path = root / BASE / "config.json"
    original = path.read_text()
    try:
        _write(path, whole if whole is not None else {**json.loads(original), **edits})
        checkpoint = dit_checkpoint(root / BASE, "original")
        config = _only_input_errors(lambda: read_dit_config(root / BASE, "original", checkpoint))
        if config is not None:
            assert config.dim % config.num_heads == 0 and 1 <= config.num_layers <= 1024
            nbytes = dit_bytes(config, AdapterConfig(2, 32, 16, 16, 2), torch.float32)  # counted on meta: no allocation
            _only_input_errors(lambda: require_fits(nbytes, "a DiT", path))
    finally:
        path.write_text(original)


W2V_KEYS = [
    "hidden_size",
    "num_attention_heads",
    "num_hidden_layers",
    "intermediate_size",
    "conv_dim",
    "conv_kernel",
    "conv_stride",
    "num_conv_pos_embeddings",
    "num_conv_pos_embedding_groups",
    "model_type",
    "feat_extract_norm",
]


@FUZZ
@given(edits=_edits(W2V_KEYS), whole=st.one_of(st.none(), JSON))
def test_wav2vec2_config(root: Path, edits: dict[str, Any], whole: Any) -> None:
    folder = root / "chinese-wav2vec2-base"
    path = folder / "config.json"
    original = path.read_text()
    try:
        _write(path, whole if whole is not None else {**json.loads(original), **edits})
        config = _only_input_errors(lambda: wav2vec2_config(folder))
        if config is not None:
            assert config.hidden_size % config.num_attention_heads == 0
    finally:
        path.write_text(original)


VAE_KEYS = ["base_dim", "z_dim", "dim_mult", "num_res_blocks", "temperal_downsample", "latents_mean", "latents_std"]
VAE_CONFIG = {
    "base_dim": 8,
    "z_dim": 4,
    "dim_mult": [1, 2],
    "num_res_blocks": 1,
    "temperal_downsample": [True],
    "latents_mean": [0.0] * 4,
    "latents_std": [1.0] * 4,
}


@FUZZ
@given(edits=_edits(VAE_KEYS), whole=st.one_of(st.none(), JSON))
def test_vae_config(tmp_path: Path, edits: dict[str, Any], whole: Any) -> None:
    path = tmp_path / "config.json"
    _write(path, whole if whole is not None else {**VAE_CONFIG, **edits})
    config = _only_input_errors(lambda: diffusers_vae_config(path))
    if config is not None:
        assert len(config.latents_mean) == config.z_dim and len(config.temperal_downsample) == len(config.dim_mult) - 1


DEMO = DemoConfig.tiny().to_dict()


@FUZZ
@given(section=st.sampled_from([None, *[k for k, v in DEMO.items() if isinstance(v, dict)]]), data=st.data())
def test_demo_config(tmp_path: Path, section: str | None, data: st.DataObject) -> None:
    config = json.loads(json.dumps(DEMO))
    target = config if section is None else config[section]
    target.update(data.draw(_edits(list(target))))
    folder = tmp_path / "weights"
    folder.mkdir(exist_ok=True)
    _write(folder / "config.json", config)
    _only_input_errors(lambda: _read_config(folder))


@FUZZ
@given(weight_map=JSON, extra=st.dictionaries(st.text(max_size=4), JSON, max_size=2))
def test_index(tmp_path: Path, weight_map: Any, extra: dict[str, Any]) -> None:
    folder = tmp_path / "model"
    folder.mkdir(exist_ok=True)
    _write(folder / "m.safetensors.index.json", {**extra, "weight_map": weight_map})
    checkpoint = _only_input_errors(lambda: ShardedCheckpoint.open(folder, "m"))
    if checkpoint is not None:
        assert all(f.parent == folder for f in checkpoint.files)


DTYPES = st.sampled_from(["F32", "F16", "BF16", "I32", "U8", "BOOL", "F64", "X9", ""])
SHAPES = st.one_of(st.lists(st.integers(-2, 5), max_size=4), st.lists(st.sampled_from([0, 2**31, 2**62, 10**30]), min_size=1, max_size=3), JSON)
TENSOR = st.fixed_dictionaries(
    {"dtype": st.one_of(DTYPES, JSON), "shape": SHAPES, "data_offsets": st.one_of(st.lists(st.integers(-4, 64), min_size=2, max_size=2), JSON)}
)


@FUZZ
@given(
    header=st.dictionaries(st.text(min_size=1, max_size=6), st.one_of(TENSOR, JSON), max_size=3),
    data=st.binary(max_size=64),
    claimed=st.one_of(st.none(), st.sampled_from([0, 1, 2**40, 2**64 - 1])),
)
def test_safetensors_header(tmp_path: Path, header: dict[str, Any], data: bytes, claimed: int | None) -> None:
    body = json.dumps(header, allow_nan=True).encode()
    path = tmp_path / "x.safetensors"
    path.write_bytes(struct.pack("<Q", len(body) if claimed is None else claimed) + body + data)
    shapes = _only_input_errors(lambda: safetensors_shapes(path))
    tensors = _only_input_errors(lambda: read_safetensors(path))
    if tensors is not None:
        assert shapes == {k: tuple(v.shape) for k, v in tensors.items()}
        _only_input_errors(lambda: read_adapter_config(path, 2, 32))
