"""The ``liveavatar`` family: Wan2.2-S2V-14B + the LiveAvatar LoRA, block-causal, in avatarstream's loop.

Blocks of 3 latent frames (12 video frames) are generated back to back
(``BlockPlan``), each in 4 steps against per-step rolling KV caches and a
shared attention sink held in the generation stage's cache, and decoded as
soon as they exist. Weights come from the folders users download.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import torch

from avatarstream.components.wan.config import VAE_SPATIAL_STRIDE, VAE_TEMPORAL_STRIDE
from avatarstream.components.wan.frames import FRAMES
from avatarstream.components.wan.layout import random_mark
from avatarstream.errors import InputError
from avatarstream.families.block_plan import BlockPlan
from avatarstream.families.builtin import BUILTIN
from avatarstream.families.liveavatar.layout import resolve
from avatarstream.families.liveavatar.load_dit import DEFAULT_ALPHA
from avatarstream.families.liveavatar.networks import LiveAvatarNetworks
from avatarstream.families.liveavatar.options import QUANTIZED_BY_DEFAULT, LiveAvatarOptions
from avatarstream.families.liveavatar.presets import Preset, check_size, parse_offsets
from avatarstream.families.liveavatar.sequence_parallel import split_dit
from avatarstream.families.options import FamilyOptions
from avatarstream.families.quantization import QUANTIZED_MARK, quantize_loaded
from avatarstream.models.liveavatar.audio_features import FPS, SAMPLE_RATE
from avatarstream.models.liveavatar.config import BLOCK_FRAMES, StreamGeometry
from avatarstream.models.liveavatar.sampler import Schedule
from avatarstream.pipeline.spec import PipelineSpec
from avatarstream.runtime.module import Module
from avatarstream.runtime.parallel.steps import SplitsSteps
from avatarstream.runtime.parallel.ulysses import SplitsSequence
from avatarstream.sources.bundled import DEFAULT_REFERENCE
from avatarstream.sources.reference import load_reference_image
from avatarstream.stages.liveavatar.context import LiveAvatarAudioStage
from avatarstream.stages.liveavatar.decode import LiveAvatarDecodeStage
from avatarstream.stages.liveavatar.generate import LiveAvatarBlockStage
from avatarstream.stages.liveavatar.reference import LiveAvatarPromptStage, LiveAvatarReferenceStage

if TYPE_CHECKING:
    from avatarstream.parity.checks import Check
    from avatarstream.parity.fixture import GoldenSet

DEFAULT_PRESET = "liveavatar"
RANDOM_WARNING = (
    "these LiveAvatar weights are random ({how}): the video is noise, at the speed of the real thing; they are for tests. "
    "Download the real weights (docs/models/liveavatar.md) and give their folder with --weights ROOT"
)


@dataclass
class LiveAvatarFamily:
    """The loaded networks as Modules, and how they become a pipeline."""

    networks: LiveAvatarNetworks
    modules: dict[str, Module]
    weights: str
    warnings: list[str] = field(default_factory=list)

    name = "liveavatar"
    fps = FPS
    Options: ClassVar[type[LiveAvatarOptions]] = LiveAvatarOptions
    summary: ClassVar[str] = BUILTIN["liveavatar"].summary
    weights_help: ClassVar[str] = BUILTIN["liveavatar"].weights_help
    golden_repos: ClassVar[tuple[str, ...]] = ("Alibaba-Quark/LiveAvatar",)

    @staticmethod
    def parity(gs: GoldenSet, on_case: Callable[[str], None]) -> list[Check]:
        from avatarstream.families.liveavatar.parity import run_cases  # parity code loads only for `avatarstream parity`

        return run_cases(gs, on_case)

    @classmethod
    def load(cls, root: Path | None, options: LiveAvatarOptions | None = None, *, device: torch.device | None = None, seed: int = 0) -> LiveAvatarFamily:
        options = options or LiveAvatarOptions()
        layout = resolve(root, base=options.base, lora=options.lora)
        alpha = options.lora_alpha if options.lora_alpha is not None else DEFAULT_ALPHA
        device = device or torch.device("cpu")
        networks = LiveAvatarNetworks.load(layout, options.torch_dtype(device), alpha=alpha, merge=options.lora_mode != "unmerged")
        random = random_mark(layout.lora)
        warnings = [RANDOM_WARNING.format(how=random)] if random is not None else []
        family = cls.from_networks(networks, f"{layout.base}, {layout.lora}", warnings=warnings)
        quantized = quantize_loaded(family.modules, options.quantize, options.quantize_modules, QUANTIZED_BY_DEFAULT, device)
        if quantized is not None:
            family.weights += QUANTIZED_MARK + quantized
        return family

    @classmethod
    def from_networks(cls, networks: LiveAvatarNetworks, weights: str, *, warnings: list[str] | None = None) -> LiveAvatarFamily:
        """The family around loaded (or benchmark-built) networks, each a runtime Module."""
        assert networks.text_encoder is not None
        modules = {
            "dit": Module("dit", networks.dit),
            "vae": Module("vae", networks.vae),
            "audio_encoder": Module("audio_encoder", networks.audio_encoder.network),
            "text_encoder": Module("text_encoder", networks.text_encoder.network),
        }
        return cls(networks, modules, weights, warnings=list(warnings or []))

    def resolve_options(self, options: LiveAvatarOptions) -> Preset:
        settings = Preset(**{k: v for k, v in options.with_preset(DEFAULT_PRESET).items() if k not in ("sink_offsets", "start_position", "kv_cache_dtype")})
        check_size(settings.size)
        if not math.isfinite(settings.audio_window_s) or settings.audio_window_s * self.fps < BLOCK_FRAMES * VAE_TEMPORAL_STRIDE:
            raise InputError(f"--audio-window must hold at least one block ({BLOCK_FRAMES * VAE_TEMPORAL_STRIDE / self.fps} s), got {settings.audio_window_s}")
        return settings

    def geometry(self, settings: Preset) -> StreamGeometry:
        width, height = settings.size
        return StreamGeometry(height // VAE_SPATIAL_STRIDE, width // VAE_SPATIAL_STRIDE, settings.cache_blocks)

    def build(self, options: FamilyOptions) -> PipelineSpec:
        options = LiveAvatarOptions.parse(options)
        settings = self.resolve_options(options)
        geometry = self.geometry(settings)
        m, n = self.modules, self.networks
        assert n.text_encoder is not None
        steps = SplitsSteps()  # each step has its own KV cache: --parallel steps=N runs one per rank
        latent_shape = (n.vae.config["z_dim"], geometry.lat_height, geometry.lat_width)
        stages = [
            LiveAvatarReferenceStage(m["vae"]),
            LiveAvatarPromptStage(m["text_encoder"], n.text_encoder),
            LiveAvatarAudioStage(
                m["audio_encoder"],
                n.audio_encoder.extractor,
                FRAMES,
                latent_shape,
                fps=self.fps,
                window_s=settings.audio_window_s,
                lookahead_frames=settings.audio_lookahead,
            ),
            LiveAvatarBlockStage(
                m["dit"],
                steps,
                Schedule.make(settings.steps, settings.shift),
                geometry,
                start_position=options.start_position or 0,
                offsets=parse_offsets(options.sink_offsets),
                kv_storage=options.kv_storage_dtype(),
            ),
            LiveAvatarDecodeStage(m["vae"]),
        ]
        parallel: dict[str, list[object]] = {"steps": [steps], "sp": [SplitsSequence("dit", m["dit"].network, split_dit)]}  # its tokens split over sp ranks too
        resolved = dataclasses.asdict(settings) | ({"kv_cache_dtype": options.kv_cache_dtype} if options.kv_cache_dtype else {})
        return PipelineSpec(stages, BlockPlan(BLOCK_FRAMES), self.fps, SAMPLE_RATE, settings.size, resolved, FRAMES, parallel=parallel)

    def reference(self, path: Path | None, options: FamilyOptions | Mapping[str, Any] | None = None) -> np.ndarray:
        """The reference image resized and centre-cropped to the output size."""
        size = self.resolve_options(LiveAvatarOptions.parse(options)).size
        return load_reference_image(path if path is not None else DEFAULT_REFERENCE, size)
