"""Load the Wan text encoder (UMT5-XXL) and its tokenizer from either Wan download layout.

Original layout: Wan's own state dict (``models_t5_umt5-xxl-enc-bf16.pth``),
sizes read from the tensor shapes, keys converted. Diffusers layout: a
transformers folder (``text_encoder/``) with a ``config.json``. Either way the
network is built on the meta device and filled tensor by tensor. The readers
of a transformers folder's JSON are public: a family's own encoders in the
same download (CLIP) are read the same way.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import torch
from huggingface_hub.errors import StrictDataclassError
from transformers import AutoTokenizer, PreTrainedTokenizerBase, UMT5Config, UMT5EncoderModel

from avatarstream.components.wan.layout import T5_FILE, T5_TOKENIZER_DIR, Layout
from avatarstream.components.wan.text_encoder import EMBEDDING_KEYS, TextEncoder, convert_wan_t5_to_transformers, umt5_config_from_wan
from avatarstream.errors import InputError
from avatarstream.runtime.quantize import linear_weights
from avatarstream.weights.config_values import MAX_HEADS, MAX_LAYERS, ConfigValues, built_from, one_line
from avatarstream.weights.files import ShardedCheckpoint, StateDict, read_pth
from avatarstream.weights.meta_load import MetaLoader, empty_weights
from avatarstream.weights.quanto import QuantoCheckpoint, QuantoHeader
from avatarstream.weights.sandbox import all_inside, inside

C = TypeVar("C")
_PLACEHOLDER = torch.empty(0)

T5_NAME = "text encoder (UMT5-XXL)"
#: The largest vocabulary a config may ask for (umt5-xxl's has 256384 tokens).
MAX_VOCAB = 1 << 20


def load_text_encoder(base: Path, layout: Layout, dtype: torch.dtype) -> TextEncoder:
    """The UMT5 encoder and its tokenizer from the Wan base folder ``base``."""
    if layout == "original":
        network = _load_wan_t5(inside(base, base / T5_FILE), dtype)
    else:
        network = _load_transformers_t5(inside(base, base / "text_encoder"), dtype)
    return TextEncoder(network, _tokenizer(base, layout))


def _tokenizer(base: Path, layout: Layout) -> PreTrainedTokenizerBase:
    return _load_tokenizer(inside(base, base / T5_TOKENIZER_DIR if layout == "original" else base / "tokenizer"))


def read_wan_pth(path: Path, what: str, configure: Callable[[dict[str, tuple[int, ...]]], C], convert: Callable[[StateDict], StateDict]) -> tuple[C, StateDict]:
    """A Wan ``.pth`` encoder checkpoint as a transformers config (from its tensors' shapes) and state dict; a missing or
    malformed tensor is an InputError that says what the file should be (``what``)."""
    state = read_pth(path)
    expected = f"expected {what}"
    try:
        return configure({key: tuple(tensor.shape) for key, tensor in state.items()}), convert(state)
    except KeyError as exc:
        raise InputError(f"{path} lacks tensor {exc}; {expected}") from exc
    except ValueError as exc:
        raise InputError(f"{path}: {exc}; {expected}") from exc


def _load_wan_t5(path: Path, dtype: torch.dtype) -> UMT5EncoderModel:
    config, tensors = read_wan_pth(path, f"Wan's UMT5-XXL encoder state dict ({T5_FILE})", umt5_config_from_wan, convert_wan_t5_to_transformers)
    with empty_weights():
        network = UMT5EncoderModel(config)
    loader = MetaLoader(network, T5_NAME, dtype)
    loader.load(_tie_embedding(tensors, dtype), path)
    return _tied(loader.finish([path]))


def load_quantized_text_encoder(base: Path, layout: Layout, path: Path, map_path: Path, dtype: torch.dtype, device: torch.device) -> TextEncoder:
    """UMT5 from a publisher's quantized file (InfiniteTalk's ``quant_models/t5_fp8.safetensors``: Wan's names, written
    by optimum-quanto, with its map ``map_path``) as it is, and the tokenizer from the base folder."""
    return TextEncoder(_load_quanto_t5(path, map_path, dtype, device), _tokenizer(base, layout))


def _load_quanto_t5(path: Path, map_path: Path, dtype: torch.dtype, device: torch.device) -> UMT5EncoderModel:
    expected = f"expected Wan's UMT5-XXL encoder quantized by optimum-quanto ({path.name})"
    try:
        config = umt5_config_from_wan(QuantoHeader(path).shapes())
        checkpoint = QuantoCheckpoint.read(path, map_path)
        plain = convert_wan_t5_to_transformers(checkpoint.plain)
        quantized = {_one_name(key): weight for key, weight in checkpoint.quantized.items()}
    except KeyError as exc:
        raise InputError(f"{path} lacks tensor {exc}; {expected}") from exc
    except ValueError as exc:
        raise InputError(f"{path}: {exc}; {expected}") from exc
    with empty_weights():
        network = UMT5EncoderModel(config)
    loader = MetaLoader(network, T5_NAME, dtype)
    loader.load(_tie_embedding(plain, dtype), path)
    loader.assign(linear_weights(network, quantized, checkpoint.mode, device, loader.precision, path), path)
    return _tied(loader.finish([path]))


def _one_name(key: str) -> str:
    (name,) = convert_wan_t5_to_transformers({key: _PLACEHOLDER}).keys()  # a linear layer's weight: one name (only the embedding has two)
    return name


def _load_transformers_t5(folder: Path, dtype: torch.dtype) -> UMT5EncoderModel:
    config_path = inside(folder, folder / "config.json")
    raw = read_config(config_path, "umt5")
    _check_sizes(raw, config_path)
    config = config_from_dict(UMT5Config, raw, config_path)
    checkpoint = ShardedCheckpoint.open(folder, "model")
    with built_from(config_path, "expected the UMT5 encoder's config"), empty_weights():
        network = UMT5EncoderModel(config)
    loader = MetaLoader(network, T5_NAME, dtype)
    for path, shard in checkpoint.shards():
        loader.load(_tie_embedding(shard, dtype), path)
        del shard
    return _tied(loader.finish([checkpoint.source]))


def _check_sizes(raw: dict[str, Any], path: Path) -> None:
    """The sizes transformers would build from, each a whole number in range (a million layers would never finish)."""
    values = ConfigValues(raw, path, "expected the UMT5 encoder's config")
    values.count("num_layers", 8, high=MAX_LAYERS)
    values.count("num_heads", 6, high=MAX_HEADS)
    for key, default in (("d_model", 512), ("d_ff", 1024), ("d_kv", 64), ("relative_attention_num_buckets", 32)):
        values.count(key, default)
    values.count("vocab_size", 250112, high=MAX_VOCAB)


def _tie_embedding(tensors: StateDict, dtype: torch.dtype) -> StateDict:
    """One token embedding under both of UMT5's tied names, cast once (a file may hold it under either name)."""
    present = [key for key in EMBEDDING_KEYS if key in tensors]
    if not present:
        return tensors
    embedding = tensors[present[0]].to(dtype)
    return {**tensors, **dict.fromkeys(EMBEDDING_KEYS, embedding)}


def _tied(network: UMT5EncoderModel) -> UMT5EncoderModel:
    """One Parameter for both names: two sharing storage would become two copies on ``.to(device)``."""
    network.encoder.embed_tokens.weight = network.shared.weight
    return network


def _load_tokenizer(folder: Path) -> PreTrainedTokenizerBase:
    if not folder.is_dir():
        raise InputError(f"tokenizer folder {folder} not found; expected the UMT5 tokenizer (tokenizer.json, tokenizer_config.json) there")
    _refuse_custom_code(folder)
    try:
        # Never run code from the folder (an ``auto_map`` config asks for it, and would prompt on stdin): refused instead.
        return AutoTokenizer.from_pretrained(str(all_inside(folder)), local_files_only=True, trust_remote_code=False)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise InputError(f"cannot load the tokenizer in {folder}: {exc}; expected the UMT5 tokenizer files (tokenizer.json, tokenizer_config.json)") from exc


def _refuse_custom_code(folder: Path) -> None:
    """A config with an ``auto_map`` asks to import Python from the folder; avatarstream never does (nor asks on stdin)."""
    for name in ("tokenizer_config.json", "config.json"):
        path = inside(folder, folder / name)
        if path.is_file() and "auto_map" in read_json(path):
            raise InputError(
                f"{path} has an 'auto_map': it asks to run Python code from the weights folder, which avatarstream never does; "
                "use the model's own tokenizer files (tokenizer.json, tokenizer_config.json without auto_map)"
            )


def read_json(path: Path) -> dict[str, Any]:
    """The JSON object in ``path``; anything else is an InputError."""
    try:
        raw = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"cannot read {path}: {exc}; expected a JSON file there") from exc
    if not isinstance(raw, dict):
        raise InputError(f"{path} holds no JSON object; expected a config")
    return raw


def read_config(path: Path, *model_types: str) -> dict[str, Any]:
    """A transformers ``config.json`` whose ``model_type`` is one of ``model_types``."""
    raw = read_json(path)
    if raw.get("model_type") not in model_types:
        raise InputError(f"{path} describes a {raw.get('model_type')!r} model; expected model_type {' or '.join(map(repr, model_types))}")
    return raw


def config_from_dict(cls: Any, raw: dict[str, Any], path: Path) -> Any:
    """``cls`` (a transformers config class) from ``raw``; values it refuses are an InputError naming ``path``."""
    try:
        return cls.from_dict(raw)
    except (TypeError, ValueError, KeyError, AttributeError, StrictDataclassError) as exc:  # transformers checks fields as dataclasses
        raise InputError(f"invalid {path}: {one_line(exc)}; expected a transformers {cls.__name__} config") from exc
