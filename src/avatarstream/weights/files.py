"""Checkpoint files: safetensors, sharded safetensors with an index, and ``.pth`` read weights-only.

Full unpickling is never used: a ``.pth`` is opened with
``torch.load(weights_only=True)``, which refuses anything but tensors and
plain containers.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import torch
from safetensors import SafetensorError, safe_open
from safetensors.torch import load_file

from avatarstream.errors import InputError
from avatarstream.weights.sandbox import inside

StateDict = dict[str, torch.Tensor]


def read_safetensors(path: Path) -> StateDict:
    """All tensors of one safetensors file."""
    _require_file(path, "a .safetensors file")
    try:
        return load_file(str(path))
    except (SafetensorError, OSError, ValueError) as exc:
        raise InputError(f"cannot read {path}: {exc}; expected a complete .safetensors file (a truncated download? fetch it again)") from exc


def safetensors_shapes(path: Path) -> dict[str, tuple[int, ...]]:
    """Tensor names and shapes from a safetensors header, without reading the data."""
    _require_file(path, "a .safetensors file")
    try:
        with safe_open(str(path), framework="pt") as handle:
            return {key: tuple(handle.get_slice(key).get_shape()) for key in handle.keys()}  # noqa: SIM118 -- safe_open is not iterable
    except (SafetensorError, OSError, ValueError) as exc:
        raise InputError(f"cannot read {path}: {exc}; expected a complete .safetensors file (a truncated download? fetch it again)") from exc


def read_pth(path: Path) -> StateDict:
    """A ``.pth`` holding a plain dict of tensors, opened weights-only (never full unpickling)."""
    _require_file(path, "a .pth checkpoint")
    try:
        state = torch.load(str(path), map_location="cpu", weights_only=True, mmap=True)
    # The weights-only unpickler fails on hostile bytes as its parsing falls (an IndexError for an empty stack, a KeyError
    # for a missing memo, a TypeError): the file's fault, whatever the type.
    except Exception as exc:
        raise InputError(
            f"cannot read {path} weights-only: {_first_line(exc)}; expected a torch checkpoint that holds only tensors "
            "(a truncated download, or a file that needs full unpickling, which avatarstream never does)"
        ) from exc
    if isinstance(state, dict) and "state_dict" in state and isinstance(state["state_dict"], dict):
        state = state["state_dict"]
    if not isinstance(state, dict) or not all(isinstance(v, torch.Tensor) for v in state.values()):
        raise InputError(f"{path} does not hold a dict of tensors; expected a model state dict")
    return state


class ShardedCheckpoint:
    """Safetensors weights split over shards listed by an index (``*.safetensors.index.json``), or one file."""

    def __init__(self, files: list[Path], source: Path) -> None:
        self.files = files
        self.source = source  # the index or the single file, for messages

    @classmethod
    def open(cls, folder: Path, stem: str) -> ShardedCheckpoint:
        """``folder/stem.safetensors.index.json`` with its shards, or ``folder/stem.safetensors``."""
        index = folder / f"{stem}.safetensors.index.json"
        single = folder / f"{stem}.safetensors"
        if index.is_file():
            inside(folder, index)
            return cls(_shard_files(folder, index), index)
        if single.is_file():
            return cls([inside(folder, single)], single)
        raise InputError(f"no {single.name} or {index.name} in {folder}; expected the model's safetensors weights there")

    def shapes(self) -> dict[str, tuple[int, ...]]:
        """Every tensor's shape, from the shard headers alone."""
        shapes: dict[str, tuple[int, ...]] = {}
        for file in self.files:
            shapes.update(safetensors_shapes(file))
        return shapes

    def shards(self) -> Iterator[tuple[Path, StateDict]]:
        """One shard's tensors at a time, so at most one shard is in memory beside the model."""
        for file in self.files:
            yield file, read_safetensors(file)


def _shard_files(folder: Path, index: Path) -> list[Path]:
    """The shard files an index names, each a plain file name inside ``folder``."""
    expected = "expected JSON with a 'weight_map' of tensor name -> shard file name"
    try:
        raw = json.loads(index.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"invalid {index}: {exc}; {expected}") from exc
    weight_map = raw.get("weight_map") if isinstance(raw, dict) else None
    if not isinstance(weight_map, dict):
        what = "no 'weight_map'" if not isinstance(raw, dict) or "weight_map" not in raw else f"a 'weight_map' that is a {type(weight_map).__name__}"
        raise InputError(f"invalid {index}: it holds {what}; {expected}")
    for key, name in weight_map.items():
        if not isinstance(name, str) or not name or not name.isprintable():  # a line break in a name would break the messages
            raise InputError(f"invalid {index}: tensor {key!r} names shard {name!r}, not a file name; {expected}")
        if Path(name).is_absolute():
            raise InputError(f"{index} names shard {name!r} by an absolute path; shards must be files in {folder}, named relative to it")
    files = [inside(folder, folder / name) for name in sorted(set(weight_map.values()))]
    missing = [str(f.relative_to(folder)) for f in files if not f.is_file()]
    if missing:
        raise InputError(f"{index} lists shards that are not in {folder}: {', '.join(missing)}; the download is incomplete")
    return files


def _first_line(exc: BaseException) -> str:
    """The first line that says something (torch's weights-only errors explain themselves over many lines)."""
    return next((line.strip() for line in str(exc).splitlines() if line.strip()), type(exc).__name__)


def _require_file(path: Path, what: str) -> None:
    if not path.is_file():
        raise InputError(f"{path} not found; expected {what} there")
