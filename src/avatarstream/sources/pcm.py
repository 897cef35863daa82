"""Raw audio as it arrives from any source (file decoder, socket, iterator)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class PcmBlock:
    """A piece of decoded audio: float32 samples in [-1, 1], shape [channels, n]."""

    samples: np.ndarray
    sample_rate: int

    @property
    def num_samples(self) -> int:
        return int(self.samples.shape[1])
