"""Reading a golden set: its description, tolerances and case tensors, with clear errors for a broken set."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from avatarstream.errors import InputError
from avatarstream.weights.files import read_safetensors


@dataclass(frozen=True)
class GoldenSet:
    root: Path
    spec: dict[str, Any]

    @classmethod
    def open(cls, root: Path) -> GoldenSet:
        path = root / "golden.json"
        if not path.is_file():
            raise InputError(f"{root} is not a golden set: no golden.json; expected golden.json, weights/ and cases/")
        try:
            spec = json.loads(path.read_text())
        except json.JSONDecodeError as exc:
            raise InputError(f"invalid {path}: {exc}") from exc
        if not isinstance(spec.get("cases"), dict) and not isinstance(spec.get("settings"), dict):
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

    def case(self, name: str) -> dict[str, Any]:
        return self.spec["cases"][name]

    def tensors(self, case: str) -> dict[str, torch.Tensor]:
        return read_safetensors(self.root / self.case(case)["file"])

    def file(self, case: str, key: str) -> Path:
        path = self.root / self.case(case)[key]
        if not path.is_file():
            raise InputError(f"{path} not found; golden.json names it as the {key} of case {case!r}")
        return path

    def tolerance(self, case: str, key: str) -> float:
        try:
            return float(self.case(case)["tolerance"][key])
        except (KeyError, TypeError, ValueError) as exc:
            raise InputError(f"golden.json gives case {case!r} no tolerance {key!r}") from exc
