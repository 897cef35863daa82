"""What every scenario shares: the model, the device, the audio, where results go."""

from __future__ import annotations

import time
from argparse import Namespace
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from avatarstream.benchmarks.audio import bundled_speech, looped
from avatarstream.benchmarks.measure import measure
from avatarstream.cli.model_args import generation_options, load_model
from avatarstream.errors import InputError
from avatarstream.families.base import Family
from avatarstream.families.demo import DemoFamily
from avatarstream.families.options import GenerationOptions
from avatarstream.models.demo import DemoConfig
from avatarstream.pipeline.pipeline import Pipeline
from avatarstream.sources.bundled import DEFAULT_REFERENCE
from avatarstream.sources.reference import load_reference_image

#: Options of ``Family.build`` that place and schedule work rather than choose what is generated.
RUNTIME_OPTIONS = ("residency", "overlap", "read_ahead")


@dataclass
class BenchContext:
    """``model_args``: the command line's model options (``--weights``, ``--model-preset`` ...), for families loaded from files."""

    model: str
    device: torch.device
    seconds: float
    repeats: int
    out_dir: Path
    minutes: float = 30.0
    model_args: Namespace | None = None
    _speech: dict[int, np.ndarray] = field(default_factory=dict)
    _loaded: Family | None = None

    @property
    def generation(self) -> GenerationOptions:
        return generation_options(self.model_args) if self.model_args is not None else GenerationOptions()

    @property
    def config(self) -> DemoConfig:
        return DemoConfig.tiny() if self.model == "demo-tiny" else DemoConfig()

    def family(self) -> tuple[Family, float]:
        """The family warmed up, and its load time: demo from random weights (speed does not depend on them), infinitetalk from its files."""
        if self.model != "infinitetalk":
            return self.demo_family()
        start = time.perf_counter()
        if self._loaded is None:
            if self.model_args is None:
                raise InputError("the infinitetalk model needs --weights ROOT")
            self._loaded = load_model(self.model_args, self.device)
        load_s = time.perf_counter() - start
        self._warm_up(self._loaded)
        return self._loaded, load_s

    def demo_family(self, config: DemoConfig | None = None) -> tuple[DemoFamily, float]:
        """``family`` for the scenarios built on the demo model (its config, its DiTs), from random weights of ``config``."""
        if self.model == "infinitetalk":
            raise InputError("this scenario runs the demo family only (it varies or reads the demo model's config)")
        start = time.perf_counter()
        family = DemoFamily.random(config or self.config)
        for module in family.modules.values():
            module.network.to(self.device)
        load_s = time.perf_counter() - start
        self._warm_up(family)
        return family, load_s

    def _warm_up(self, family: Family) -> None:
        self.run(family, seconds=1.0, encode=False)  # first calls allocate and initialise kernels

    def reference(self, size: int | tuple[int, int]) -> np.ndarray:
        return load_reference_image(DEFAULT_REFERENCE, size)

    def speech(self, rate: int) -> np.ndarray:
        if rate not in self._speech:
            self._speech[rate] = bundled_speech(rate)
        return self._speech[rate]

    def pipeline(self, family: Family, **options: Any) -> Pipeline:
        """``family``'s pipeline with the command line's generation options, overridden by ``options``."""
        runtime = {k: options.pop(k) for k in RUNTIME_OPTIONS if k in options}
        return family.build(self.device, GenerationOptions(**{**self.generation.given(), **options}), **runtime)

    def run(self, family: Family, seconds: float | None = None, *, encode: bool = True, keep_frames: bool = False, **pipeline_options: Any) -> dict[str, Any]:
        """One measured run of ``seconds`` of looped speech."""
        pipeline = self.pipeline(family, **pipeline_options)
        rate = pipeline.model_sample_rate
        audio = looped(self.speech(rate), rate, seconds or self.seconds)
        target = self.out_dir / "tmp.mp4" if encode else None
        try:
            return measure(pipeline, self.reference(family.frame_size), audio, encode_to=target, keep_frames=keep_frames)
        finally:
            if target is not None:
                target.unlink(missing_ok=True)
