"""The ``demo`` family: small models that run in real time on a CPU (DESIGN.md §9).

Weights come from a local folder of safetensors files (one per module, plus
``config.json``); without one the modules start from random weights drawn
from a fixed seed, so every run of the same command is identical.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import torch

from avatarstream.errors import InputError
from avatarstream.families.base import OptionsLike
from avatarstream.families.builtin import BUILTIN
from avatarstream.families.chunk_plan import ChunkPlan
from avatarstream.families.demo_options import (
    DEFAULT_CHUNK_FRAMES,
    DEFAULT_INTERP_FRAMES,
    DEFAULT_SHIFT,
    DEFAULT_STEPS,
    DEFAULTS,
    MOTION_FRAMES,
    QUANTIZED_BY_DEFAULT,
    DemoOptions,
)
from avatarstream.families.demo_parallel import split_a2v
from avatarstream.families.demo_reference import choose_reference
from avatarstream.families.demo_weights import FORMAT_KEY, FORMAT_VERSION, SHIPPED_WEIGHTS, read_config_json
from avatarstream.families.options import FamilyOptions
from avatarstream.families.quantization import QUANTIZED_MARK, quantize_loaded
from avatarstream.models.demo import (
    A2VDiT,
    AudioEncoder,
    CausalVAE,
    DemoConfig,
    FlowMatchEuler,
    ReferenceEncoder,
    SRDiT,
    TextEncoder,
)
from avatarstream.pipeline.spec import PipelineSpec
from avatarstream.runtime.module import Module
from avatarstream.runtime.parallel.ulysses import SplitsSequence
from avatarstream.stages.demo.audio_to_video import AudioToVideoStage
from avatarstream.stages.demo.context import ContextGenStage
from avatarstream.stages.demo.decode import DecodeStage
from avatarstream.stages.demo.reference import ReferenceEncodeStage
from avatarstream.stages.demo.super_resolution import SuperResolutionStage
from avatarstream.stages.demo.text import TextEncodeStage
from avatarstream.weights.config_values import built_from
from avatarstream.weights.memory_check import meta_bytes, require_fits
from avatarstream.weights.sandbox import inside

RANDOM_NOTE = (
    "this model has random weights (drawn from seed {seed}): it renders grey noise, at the speed of the real thing; it is for benchmarks "
    "and tests. --model demo with its bundled weights animates the bundled avatar"
)

_NETWORKS = {
    "vae": CausalVAE,
    "audio_encoder": AudioEncoder,
    "text_encoder": TextEncoder,
    "reference_encoder": ReferenceEncoder,
    "a2v_dit": A2VDiT,
    "sr_dit": SRDiT,
}


@dataclass
class DemoFamily:
    """The demo family's config and loaded modules."""

    config: DemoConfig
    modules: dict[str, Module]
    weights: str  # where the weights came from, for reports
    warnings: list[str] = field(default_factory=list)  # about the weights, for every run (input_warnings.py)

    Options: ClassVar[type[DemoOptions]] = DemoOptions
    summary: ClassVar[str] = BUILTIN["demo"].summary
    weights_help: ClassVar[str] = BUILTIN["demo"].weights_help
    variant: ClassVar[str] = "default"
    #: what `avatarstream eval` switches off to measure what the I-chunks buy
    seam_smoothing_off: ClassVar[Mapping[str, Any]] = {"interp_frames": 0}

    @classmethod
    def load(
        cls, weights_dir: str | os.PathLike[str] | None = None, options: DemoOptions | None = None, *, device: torch.device | None = None, seed: int = 0
    ) -> DemoFamily:
        """The shipped weights (``default``), a folder's, or random weights drawn from ``seed`` (``tiny``, or no weights shipped);
        quantized as the load options say."""
        options = options or DemoOptions()
        family = cls._read(weights_dir, seed)
        quantized = quantize_loaded(family.modules, options.quantize, options.quantize_modules, QUANTIZED_BY_DEFAULT, device or torch.device("cpu"))
        if quantized is not None:
            family.weights += QUANTIZED_MARK + quantized
        return family

    @classmethod
    def _read(cls, weights_dir: str | os.PathLike[str] | None, seed: int) -> DemoFamily:
        if weights_dir is None and cls.variant == "default" and (SHIPPED_WEIGHTS / "config.json").is_file():
            weights_dir = Path(str(SHIPPED_WEIGHTS))
        if weights_dir is None:
            return cls.random(DemoConfig.tiny() if cls.variant == "tiny" else DemoConfig(), seed=seed)
        folder = Path(weights_dir)
        config = _read_config(folder)
        # the package's own weights are not untrusted input, and the meta build costs seconds of torch imports
        if folder.resolve() != Path(str(SHIPPED_WEIGHTS)).resolve():
            _check_fits(folder, config)
        modules = {name: Module.build(name, partial(net, config), weights=inside(folder, folder / f"{name}.safetensors")) for name, net in _NETWORKS.items()}
        return cls(config, modules, str(folder))

    @classmethod
    def random(cls, config: DemoConfig, *, seed: int = 0) -> DemoFamily:
        """Every module from random weights drawn from ``seed`` (for benchmarks and before training)."""
        modules = {name: Module.build(name, partial(net, config), seed=seed + i) for i, (name, net) in enumerate(_NETWORKS.items())}
        return cls(config, modules, f"random (seed {seed})", warnings=[RANDOM_NOTE.format(seed=seed)])

    def save(self, folder: str | Path) -> None:
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "config.json").write_text(json.dumps({FORMAT_KEY: FORMAT_VERSION, **self.config.to_dict()}, indent=2))
        for name, module in self.modules.items():
            module.save_weights(folder / f"{name}.safetensors")

    def spec(
        self,
        *,
        chunk_frames: int = DEFAULT_CHUNK_FRAMES,
        interp_frames: int = DEFAULT_INTERP_FRAMES,
        steps: int = DEFAULT_STEPS,
        shift: float = DEFAULT_SHIFT,
    ) -> PipelineSpec:
        """The demo pipeline with these settings (``build`` takes them from the user's options)."""
        cfg, m = self.config, self.modules
        plan = ChunkPlan(chunk_frames, interp_frames, MOTION_FRAMES)
        try:
            sampler = FlowMatchEuler(steps, shift)
        except ValueError as exc:
            raise InputError(f"invalid sampler setting: {exc}") from exc
        base_latent = (cfg.vae.latent_channels, cfg.base_latent_size, cfg.base_latent_size)
        stages = [
            ReferenceEncodeStage(m["vae"], m["reference_encoder"], cfg.base_size),
            TextEncodeStage(m["text_encoder"]),
            ContextGenStage(m["audio_encoder"], base_latent),
            AudioToVideoStage(m["a2v_dit"], sampler),
            SuperResolutionStage(m["sr_dit"]),
            DecodeStage(m["vae"]),
        ]
        settings = {"chunk_frames": chunk_frames, "interp_frames": interp_frames, "steps": steps, "shift": shift}
        dit = m["a2v_dit"]
        parallel = {"sp": [SplitsSequence(dit.name, dit.network, split_a2v)]}  # the A2V DiT's tokens split over sp ranks
        return PipelineSpec(stages, plan, cfg.fps, cfg.sample_rate, (cfg.image_size, cfg.image_size), settings, parallel=parallel)

    # -- the family interface (families/base.py) --------------------------------------------------

    name = "demo"

    @property
    def fps(self) -> int:
        return self.config.fps

    def build(self, options: FamilyOptions) -> PipelineSpec:
        """``spec`` from the user's options."""
        return self.spec(**{**DEFAULTS, **DemoOptions.parse(options).given("build")})

    def reference(self, path: Path | None, options: FamilyOptions | Mapping[str, Any] | None = None) -> np.ndarray:
        source = self.weights.partition(QUANTIZED_MARK)[0]
        shipped = not source.startswith("random") and Path(source) == Path(str(SHIPPED_WEIGHTS))
        return choose_reference(path, DemoOptions.parse(options).avatar, self.config.image_size, shipped_weights=shipped)

    # -- what the benchmarks ask for (optional members, families/base.py; the code is in demo_bench.py) --------------

    #: renders in real time on a CPU with nothing to download: the benchmarks that run it in fresh processes may take it
    cpu_real_time: ClassVar[bool] = True

    def raw_frames(self, reference_image: np.ndarray, samples: np.ndarray, *, options: OptionsLike = None, seed: int = 0) -> Iterator[np.ndarray]:
        """The overhead benchmark's baseline: the frames ``options`` make, from the networks called in a plain loop."""
        from avatarstream.families.demo_bench import raw_frames  # benchmark code loads only for `avatarstream bench`

        return raw_frames(self, reference_image, samples, options=options, seed=seed)

    def resolution_sweep(self) -> list[tuple[int, Callable[[], DemoFamily]]]:
        """The resolution benchmark's models: (output size, a maker of this architecture at that size, random weights)."""
        from avatarstream.families.demo_bench import resolution_sweep

        return resolution_sweep(self.config, type(self).random)

    @classmethod
    def production_model(cls) -> DemoFamily:
        """The gpu benchmark's model: this architecture at production size, random weights."""
        from avatarstream.families.demo_bench import production_model

        return production_model(cls.random)


class DemoTinyFamily(DemoFamily):
    """``demo-tiny``: the demo architecture at its smallest, from random weights (grey noise, for benchmarks and tests)."""

    summary: ClassVar[str] = BUILTIN["demo-tiny"].summary
    weights_help: ClassVar[str] = BUILTIN["demo-tiny"].weights_help
    variant: ClassVar[str] = "tiny"


def _check_fits(folder: Path, config: DemoConfig) -> None:
    """The model a folder's config describes, sized on the meta device against the machine; what a network's constructor
    refuses (a negative channel count) is the config's fault."""
    with built_from(folder / "config.json", "expected the config.json of a demo weights folder"):
        nbytes = sum(meta_bytes(partial(net, config), 4) for net in _NETWORKS.values())
    require_fits(nbytes, "a demo model", folder / "config.json")


def _read_config(folder: Path) -> DemoConfig:
    data = read_config_json(folder)
    try:
        return DemoConfig.from_dict(data)
    except (ValueError, TypeError) as exc:
        raise InputError(f"invalid {folder / 'config.json'}: {exc}") from exc
