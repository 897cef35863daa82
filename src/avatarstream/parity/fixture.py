"""Reading a golden set: its description, tolerances and case tensors, with clear errors for a broken set."""

from __future__ import annotations

import wave
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
import torch

from avatarstream.errors import InputError
from avatarstream.weights.config_values import read_json_object
from avatarstream.weights.files import read_safetensors
from avatarstream.weights.sandbox import inside

if TYPE_CHECKING:
    from avatarstream.parity.checks import Check

N = TypeVar("N")


@dataclass(frozen=True)
class GoldenSet:
    root: Path
    spec: dict[str, Any]

    @classmethod
    def open(cls, root: Path) -> GoldenSet:
        path = root / "golden.json"
        if not path.is_file():
            raise InputError(f"{root} is not a golden set: no golden.json; expected golden.json, weights/ and cases/")
        spec = read_json_object(path, "expected the golden set's description: its cases and their tolerances")
        cases = spec.get("cases")
        if isinstance(cases, dict):
            if not all(isinstance(c, dict | str) for c in cases.values()):
                raise InputError(f"{path}: every entry of 'cases' must be an object (a case's settings and tolerances) or a string (what the case checks)")
        elif not isinstance(spec.get("settings"), dict):
            raise InputError(
                f"{path} has neither a 'cases' section (a component set: the cases to run and their tolerances) "
                "nor 'settings' (a whole-video set: the reference's run and its frames)"
            )
        return cls(root, spec)

    @property
    def whole_video(self) -> bool:
        """A whole-video set: the reference CLI's ``command`` and ``settings``, its frames in ``cases/frames.safetensors``."""
        return not isinstance(self.spec.get("cases"), dict)

    def video_tolerance(self, key: str) -> float:
        try:
            return float(self.spec["tolerance"][key])
        except (KeyError, TypeError, ValueError) as exc:
            raise InputError(f"{self.root / 'golden.json'} gives the video no tolerance {key!r}") from exc

    @property
    def reference_repo(self) -> str:
        """The repository whose code made the set (``reference.repo``): it says which family ports it."""
        reference = self.spec.get("reference")
        repo = reference.get("repo") if isinstance(reference, dict) else None
        if not isinstance(repo, str):
            raise InputError(f"{self.root / 'golden.json'} names no reference.repo; it says which implementation made the set")
        return repo

    @property
    def weights(self) -> Path:
        return self.root / "weights"

    def cases(self) -> list[str]:
        return list(self.spec["cases"])

    def case(self, name: str) -> Entries:
        return Entries(self.spec["cases"][name], f"{self.root / 'golden.json'} case {name!r}")

    def tensors(self, case: str) -> Entries:
        path = self.file(case, "file")
        tensors = read_safetensors(path)
        for key, shape in self.case(case).get("tensors", {}).items():  # the shapes golden.json states, where it states them (else a description)
            if key in tensors and isinstance(shape, list) and list(tensors[key].shape) != shape:
                raise InputError(
                    f"{path} holds {key} of shape {list(tensors[key].shape)}, but golden.json says {shape}; the set's files do not belong together"
                )
        return Entries(tensors, str(path))

    def file(self, case: str, key: str) -> Path:
        name = self.case(case)[key]
        if not isinstance(name, str):
            raise InputError(f"{self.root / 'golden.json'} names the {key} of case {case!r} by {name!r}, not a file name")
        path = inside(self.root, self.root / name)
        if not path.is_file():
            raise InputError(f"{path} not found; golden.json names it as the {key} of case {case!r}")
        return path

    def tolerance(self, case: str, key: str) -> float:
        try:
            return float(self.case(case)["tolerance"][key])
        except (KeyError, TypeError, ValueError) as exc:
            raise InputError(f"golden.json gives case {case!r} no tolerance {key!r}") from exc


def run_each(gs: GoldenSet, cases: Mapping[str, Callable[[GoldenSet, N], list[Check]]], load: Callable[[], N], on_case: Callable[[str], None]) -> list[Check]:
    """Every case the set lists, with the networks ``load`` gives (called once every case is known), without autograd."""
    unknown = [name for name in gs.cases() if name not in cases]
    if unknown:
        raise InputError(f"{gs.root / 'golden.json'} has cases this version cannot run: {', '.join(unknown)}; known cases: {', '.join(cases)}")
    networks = load()
    checks: list[Check] = []
    with torch.inference_mode():
        for name in gs.cases():
            on_case(name)
            checks += cases[name](gs, networks)
    return checks


class Entries(dict[str, Any]):
    """A golden set's mapping (a case's settings, a case file's tensors) whose missing key is one InputError naming where
    it was looked for; nested objects come back as Entries too."""

    def __init__(self, values: dict[str, Any], where: str) -> None:
        super().__init__(values)
        self.where = where

    def __getitem__(self, key: str) -> Any:
        value = super().__getitem__(key)
        return Entries(value, f"{self.where} {key!r}") if isinstance(value, dict) else value

    def __missing__(self, key: str) -> Any:
        raise InputError(f"{self.where} has no {key!r}; the golden set is incomplete or made by another version of its generator")


def read_wav_int16(path: Path) -> np.ndarray:
    """A 16-bit mono WAV as float32 in [-1, 1) (samples / 32768), as the reference reads it."""
    try:
        with wave.open(str(path)) as handle:
            if handle.getsampwidth() != 2 or handle.getnchannels() != 1:
                raise InputError(f"{path} must be 16-bit mono PCM WAV")
            pcm = np.frombuffer(handle.readframes(handle.getnframes()), dtype=np.int16)
    except (wave.Error, EOFError) as exc:
        raise InputError(f"cannot read {path}: {exc}; expected a 16-bit mono WAV") from exc
    return pcm.astype(np.float32) / 32768
