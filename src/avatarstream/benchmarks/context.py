"""What every scenario shares: the model, the device, the audio, where results go."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from avatarstream.benchtools.audio import bundled_speech, looped
from avatarstream.benchtools.measure import measure
from avatarstream.errors import InputError
from avatarstream.families.assemble import build_pipeline
from avatarstream.families.base import Family, optional
from avatarstream.families.options import FamilyOptions
from avatarstream.families.registry import NO_UPSCALE, Upscale, family_class, load_family, names
from avatarstream.pipeline.pipeline import Pipeline
from avatarstream.sources.bundled import DEFAULT_REFERENCE
from avatarstream.sources.reference import load_reference_image

#: Options of ``Family.build`` that place and schedule work rather than choose what is generated.
RUNTIME_OPTIONS = ("residency", "overlap", "read_ahead")


@dataclass
class BenchContext:
    """``model``, ``weights`` and ``model_options`` as ``render`` takes them; ``argv``: the command line, for scenarios that re-run it."""

    model: str
    device: torch.device
    seconds: float
    repeats: int
    out_dir: Path
    minutes: float = 30.0
    weights: Path | None = None
    model_options: FamilyOptions | None = None
    argv: list[str] = field(default_factory=list)
    compile: bool = False  # --compile: every pipeline's DiT blocks compiled (a scenario may ask for either)
    upscale: Upscale = NO_UPSCALE  # --upscale: the upscaler the loaded model's frames go through
    _speech: dict[int, np.ndarray] = field(default_factory=dict)
    _loaded: Family | None = None

    @property
    def options(self) -> FamilyOptions:
        return self.model_options if self.model_options is not None else family_class(self.model).Options()

    def family(self) -> tuple[Family, float]:
        """The family loaded exactly as ``render`` loads it (``--weights``, the load options), warmed up, and its load time."""
        start = time.perf_counter()
        if self._loaded is None:
            self._loaded = self.upscale.load(load_family(self.model, self.weights, self.options, device=self.device), device=self.device)
        load_s = time.perf_counter() - start
        self._warm_up(self._loaded)
        return self._loaded, load_s

    def require(self, member: str, scenario: str, what: str) -> None:
        """Refuse, before anything loads, a model whose class lacks optional ``member`` (``families/base.py``): an InputError
        saying that ``scenario`` needs a model that ``what`` and which installed models do."""
        if not optional(family_class(self.model), member):
            having = ", ".join(name for name in names() if _offers(name, member)) or "none installed"
            raise InputError(f"the {scenario} scenario needs a model that {what} (family member {member}); {self.model} does not (models that do: {having})")

    def made(self, make: Callable[[], Family]) -> tuple[Family, float]:
        """A model a scenario makes itself (another size, random weights): on the device, warmed up, and the seconds making it took."""
        start = time.perf_counter()
        family = make()
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
        """``family``'s pipeline with the command line's model options, overridden by ``options``."""
        compiled = options.pop("compile", self.compile)
        runtime = {k: options.pop(k) for k in RUNTIME_OPTIONS if k in options}
        pipeline = build_pipeline(family, self.device, {**self.options.given("build", "request"), **options}, **runtime)
        if compiled:
            pipeline.compile()
        return pipeline

    def run(self, family: Family, seconds: float | None = None, *, encode: bool = True, keep_frames: bool = False, **pipeline_options: Any) -> dict[str, Any]:
        """One measured run of ``seconds`` of looped speech."""
        pipeline = self.pipeline(family, **pipeline_options)
        rate = pipeline.model_sample_rate
        audio = looped(self.speech(rate), rate, seconds or self.seconds)
        target = self.out_dir / "tmp.mp4" if encode else None
        try:
            assert pipeline.frame_size is not None, "a family's pipeline knows its size"
            measured = measure(pipeline, self.reference(pipeline.frame_size), audio, encode_to=target, keep_frames=keep_frames)
            return {**measured, "resolution": list(pipeline.frame_size)}
        finally:
            if target is not None:
                target.unlink(missing_ok=True)


def _offers(model: str, member: str) -> bool:
    """Whether the class of ``model`` has optional ``member`` (False for a registered class that cannot be imported)."""
    try:
        return bool(optional(family_class(model), member))
    except InputError:
        return False
