"""One comparison of a computed tensor with its reference."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import torch


@dataclass(frozen=True)
class Check:
    """A measured figure against its limit: at most ``tolerance`` (an error), or at least it (``bound="min"``: a PSNR)."""

    case: str
    name: str
    max_abs_err: float  # the measured figure: an error for bound "max"
    tolerance: float
    bound: Literal["max", "min"] = "max"

    @property
    def passed(self) -> bool:
        return self.max_abs_err >= self.tolerance if self.bound == "min" else self.max_abs_err <= self.tolerance

    @classmethod
    def compare(cls, case: str, name: str, ours: torch.Tensor, reference: torch.Tensor, tolerance: float) -> Check:
        if tuple(ours.shape) != tuple(reference.shape):
            return cls(case, f"{name} (shape {tuple(ours.shape)} != {tuple(reference.shape)})", float("inf"), tolerance)
        return cls(case, name, (ours.double() - reference.double()).abs().max().item(), tolerance)
