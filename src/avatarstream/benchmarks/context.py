"""What every scenario shares: the model, the device, the audio, where results go."""

from __future__ import annotations

import time
from importlib import resources
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from avatarstream.benchmarks.audio import bundled_speech, looped
from avatarstream.benchmarks.measure import measure
from avatarstream.families.demo import DemoFamily
from avatarstream.models.demo import DemoConfig
from avatarstream.sources.reference import load_reference_image


@dataclass
class BenchContext:
    model: str
    device: torch.device
    seconds: float
    repeats: int
    out_dir: Path
    minutes: float = 30.0
    _speech: dict[int, np.ndarray] = field(default_factory=dict)

    @property
    def config(self) -> DemoConfig:
        return DemoConfig.tiny() if self.model == "demo-tiny" else DemoConfig()

    def family(self, config: DemoConfig | None = None) -> tuple[DemoFamily, float]:
        """Random-weight family (speed does not depend on the weights), warmed up, and its load time."""
        start = time.perf_counter()
        family = DemoFamily.random(config or self.config)
        for module in family.modules.values():
            module.network.to(self.device)
        load_s = time.perf_counter() - start
        self.run(family, seconds=1.0, encode=False)  # first calls allocate and initialise kernels
        return family, load_s

    def reference(self, size: int) -> np.ndarray:
        return load_reference_image(str(resources.files("avatarstream") / "assets" / "reference.png"), size)

    def speech(self, rate: int) -> np.ndarray:
        if rate not in self._speech:
            self._speech[rate] = bundled_speech(rate)
        return self._speech[rate]

    def run(self, family: DemoFamily, seconds: float | None = None, *, encode: bool = True, keep_frames: bool = False, **pipeline_options: Any) -> dict[str, Any]:
        """One measured run of ``seconds`` of looped speech."""
        cfg = family.config
        pipeline = family.pipeline(self.device, **pipeline_options)
        audio = looped(self.speech(cfg.sample_rate), cfg.sample_rate, seconds or self.seconds)
        target = self.out_dir / "tmp.mp4" if encode else None
        try:
            return measure(pipeline, self.reference(cfg.image_size), audio, encode_to=target, keep_frames=keep_frames)
        finally:
            if target is not None:
                target.unlink(missing_ok=True)
