"""The binary and index files of a weights folder: a sharded checkpoint's index, a safetensors file (its header says
every tensor's dtype, shape and place) and a ``.pth`` (a zip of pickles, opened weights-only)."""

from __future__ import annotations

import io
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import torch
from safetensors.torch import save

from avatarstream.components.wan.layout import random_mark
from avatarstream.components.wan.load_vae import original_vae_config
from avatarstream.families.infinitetalk.load_dit import read_adapter_config
from avatarstream.models.infinitetalk.config import AUDIO_WINDOW
from avatarstream.weights.files import ShardedCheckpoint, read_pth, read_safetensors, safetensors_shapes
from fuzz import scenes
from fuzz.contract import Breach, Run
from fuzz.target import JSON_WORDS, Target, file_target

READERS = ("avatarstream.weights.files", "avatarstream.weights.sandbox")
STEM = "diffusion_pytorch_model"
#: The audio encoder an adapter seed is sized for: layers x width (the adapter's first layer takes AUDIO_WINDOW of each).
BLOCKS, CHANNELS = 2, 4
SAFETENSORS_WORDS = ('"dtype"', '"shape"', '"data_offsets"', '"__metadata__"', '"F32"', '"BF16"', '"F16"', '"I64"', '"U8"', '"BOOL"', '"F8_E4M3"', "\xff" * 8)


def _index(root: Path) -> None:
    ShardedCheckpoint.open(root / "Wan2.1-I2V-14B-480P", STEM).shapes()


def _safetensors_seeds() -> list[bytes]:
    adapter = {
        "audio_proj.proj1.weight": torch.zeros(8, AUDIO_WINDOW * BLOCKS * CHANNELS),
        "audio_proj.norm.weight": torch.ones(4),
        "audio_proj.proj3.weight": torch.zeros(12, 8),
    }
    mixed = {"a": torch.zeros(2, 3, dtype=torch.bfloat16), "b": torch.arange(4, dtype=torch.int64), "c": torch.zeros(0), "d": torch.tensor(True)}
    return [save(adapter, metadata={"avatarstream_random_weights": "seed 0"}), save(mixed)]


@contextmanager
def _prepare_safetensors(folder: Path) -> Iterator[tuple[Run, list[bytes]]]:
    path = folder / "x.safetensors"

    def run(data: bytes) -> None:
        path.write_bytes(data)
        random_mark(path)
        shapes = safetensors_shapes(path)
        tensors = read_safetensors(path)
        if shapes != {name: tuple(t.shape) for name, t in tensors.items()}:
            raise Breach(f"the header's shapes {shapes} are not those of the tensors read", "shapes")
        read_adapter_config(path, BLOCKS, CHANNELS)

    yield run, _safetensors_seeds()


def _pth_seeds() -> list[bytes]:
    vae = {"encoder.conv1.weight": torch.zeros(4, 3, 3, 3, 3), "conv2.weight": torch.zeros(8, 8, 1, 1, 1), "scale": torch.tensor(0.5, dtype=torch.bfloat16)}
    seeds = []
    for state in (vae, {"state_dict": vae}, {"x": torch.ones(3, dtype=torch.float16)}):
        buffer = io.BytesIO()
        torch.save(state, buffer)
        seeds.append(buffer.getvalue())
    return [*seeds, _pickle_replaced(seeds[0], b"\x80\x02.")]  # found: a pickle that stops on an empty stack (IndexError)


def _pickle_replaced(checkpoint: bytes, pickle: bytes) -> bytes:
    """A torch checkpoint (a zip) with its ``data.pkl`` replaced."""
    source = zipfile.ZipFile(io.BytesIO(checkpoint))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as archive:
        for name in source.namelist():
            archive.writestr(name, pickle if name.endswith("/data.pkl") else source.read(name))
    return out.getvalue()


@contextmanager
def _prepare_pth(folder: Path) -> Iterator[tuple[Run, list[bytes]]]:
    path = folder / "Wan2.1_VAE.pth"

    def run(data: bytes) -> None:
        path.write_bytes(data)
        original_vae_config(read_pth(path), path)

    yield run, _pth_seeds()


TARGETS = [
    file_target(
        "safetensors-index",
        scenes.infinitetalk_original,
        f"Wan2.1-I2V-14B-480P/{STEM}.safetensors.index.json",
        _index,
        READERS,
        found=({"weight_map": {"blocks.0.ffn.0.weight": "a\nb.safetensors"}},),  # a line break in a message
    ),
    Target(
        "safetensors",
        _prepare_safetensors,
        ("avatarstream.components.wan.layout", "avatarstream.families.infinitetalk.load_dit", *READERS),
        words=SAFETENSORS_WORDS + JSON_WORDS,
    ),
    Target(
        "pth",
        _prepare_pth,
        ("avatarstream.components.wan.load_vae", *READERS),
        instrument=("torch._weights_only_unpickler", "torch.serialization"),
        words=("PK\x03\x04", "PK\x01\x02", "PK\x05\x06", "data.pkl", "byteorder", "little", "\x80\x02", "ctorch._utils\n_rebuild_tensor_v2\n", "storage"),
    ),
]
