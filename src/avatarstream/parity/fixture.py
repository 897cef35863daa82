"""Reading a golden set: its description, tolerances and case tensors, with clear errors for a broken set."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from avatarstream.errors import InputError
from avatarstream.weights.config_values import read_json_object
from avatarstream.weights.files import read_safetensors
from avatarstream.weights.sandbox import inside


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
        if not isinstance(spec.get("cases"), dict) or not all(isinstance(c, dict) for c in spec["cases"].values()):
            raise InputError(f"{path} has no 'cases' section; expected the cases to run and their tolerances")
        return cls(root, spec)

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
        for key, shape in self.case(case).get("tensors", {}).items():  # the shapes golden.json states, where it states them
            if key in tensors and list(tensors[key].shape) != shape:
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
