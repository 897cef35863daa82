"""The ``flashhead`` family: SoulX-FlashHead (Pro or Lite) in avatarstream's chunk loop, live and without a length limit.

Chunks of ``chunk_frames`` video frames are generated back to back
(``BlockPlan`` over a timeline of video frames), each continuing from the
previous chunk's colour-corrected last frames, re-encoded; each adds
``chunk_frames - motion_frames`` new frames. What a chunk needs of the past (the
motion latents, the session's generator) is the chunk stage's fixed-size
cache, and its audio is the reference's 8-second buffer read back from the
audio track, so memory does not grow with the session.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import torch

from avatarstream.components.wan.layout import random_mark
from avatarstream.families.block_plan import BlockPlan
from avatarstream.families.builtin import BUILTIN
from avatarstream.families.flashhead.layout import resolve
from avatarstream.families.flashhead.networks import FlashHeadNetworks
from avatarstream.families.flashhead.options import QUANTIZED_BY_DEFAULT, FlashHeadOptions
from avatarstream.families.flashhead.presets import ChunkGeometry, Preset, check_geometry
from avatarstream.families.flashhead.reference_image import load_reference
from avatarstream.families.options import FamilyOptions
from avatarstream.families.quantization import QUANTIZED_MARK, quantize_loaded
from avatarstream.models.flashhead.audio_features import FPS, SAMPLE_RATE
from avatarstream.models.flashhead.sampler import timesteps
from avatarstream.pipeline.spec import PipelineSpec
from avatarstream.runtime.module import Module
from avatarstream.sources.bundled import DEFAULT_REFERENCE
from avatarstream.stages.flashhead.audio import FlashHeadAudioStage
from avatarstream.stages.flashhead.frames import FlashHeadFramesStage
from avatarstream.stages.flashhead.generate import ChunkSettings, FlashHeadChunkStage
from avatarstream.stages.flashhead.reference import FlashHeadReferenceStage

if TYPE_CHECKING:
    from avatarstream.parity.checks import Check
    from avatarstream.parity.fixture import GoldenSet

RANDOM_WARNING = (
    "these FlashHead weights are random ({how}): the video is noise, at the speed of the real thing; they are for tests. "
    "Download the real weights (docs/models/flashhead.md) and give their folder with --weights ROOT"
)


@dataclass
class FlashHeadFamily:
    """The loaded networks of one variant as Modules, and how they become a pipeline."""

    networks: FlashHeadNetworks
    modules: dict[str, Module]
    weights: str
    warnings: list[str] = field(default_factory=list)

    name = "flashhead"
    fps = FPS
    Options: ClassVar[type[FlashHeadOptions]] = FlashHeadOptions
    summary: ClassVar[str] = BUILTIN["flashhead"].summary
    weights_help: ClassVar[str] = BUILTIN["flashhead"].weights_help
    golden_repos: ClassVar[tuple[str, ...]] = ("https://github.com/Soul-AILab/SoulX-FlashHead", "Soul-AILab/SoulX-FlashHead")

    @staticmethod
    def parity(gs: GoldenSet, on_case: Callable[[str], None]) -> list[Check]:
        from avatarstream.families.flashhead.parity import run_cases  # parity code loads only for `avatarstream parity`

        return run_cases(gs, on_case)

    @classmethod
    def load(cls, root: Path | None, options: FlashHeadOptions | None = None, *, device: torch.device | None = None, seed: int = 0) -> FlashHeadFamily:
        options = options or FlashHeadOptions()
        device = device or torch.device("cpu")
        layout = resolve(root, variant=options.variant, base=options.base, audio_encoder=options.audio_encoder)
        networks = FlashHeadNetworks.load(layout, options.torch_dtype(device))
        random = random_mark(layout.weights_file)
        warnings = [RANDOM_WARNING.format(how=random)] if random is not None else []
        family = cls.from_networks(networks, f"{layout.model}, {layout.vae}, {layout.audio_encoder}", warnings=warnings)
        quantized = quantize_loaded(family.modules, options.quantize, options.quantize_modules, QUANTIZED_BY_DEFAULT, device)
        if quantized is not None:
            family.weights += QUANTIZED_MARK + quantized
        return family

    @classmethod
    def from_networks(cls, networks: FlashHeadNetworks, weights: str, *, warnings: list[str] | None = None) -> FlashHeadFamily:
        """The family around loaded (or benchmark-built) networks, each a runtime Module."""
        modules = {"dit": Module("dit", networks.dit), "vae": Module("vae", networks.vae), "audio_encoder": Module("audio_encoder", networks.audio_encoder)}
        return cls(networks, modules, weights, warnings=list(warnings or []))

    @classmethod
    def production_model(cls) -> FlashHeadFamily:
        """``avatarstream bench --scenario gpu``'s model: Pro at its real size with random weights, built in bf16 straight on the
        GPU (on a CPU in float32), as ``bench/gpu_all.sh``'s flashhead part builds both variants."""
        from avatarstream.families.flashhead.random_networks import DTYPE, build_networks  # loads only for `avatarstream bench`

        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        dtype = DTYPE if device.type == "cuda" else torch.float32
        return cls.from_networks(build_networks("pro", tiny=False, device=device, dtype=dtype), "random real-size pro weights")

    def resolve_options(self, options: FlashHeadOptions) -> tuple[Preset, ChunkGeometry]:
        """The settings ``options`` make (the preset's, the user's on top), checked against this variant's VAE."""
        settings = Preset(**options.with_preset(self.networks.variant))
        stride, spatial, _ = self.networks.dit.config.vae_stride
        patch = self.networks.dit.config.patch_size
        return settings, check_geometry(settings, stride, spatial * max(patch[1], patch[2]))

    def build(self, options: FamilyOptions) -> PipelineSpec:
        options = FlashHeadOptions.parse(options)
        settings, geometry = self.resolve_options(options)
        config = self.networks.dit.config
        width, height = settings.size
        latent_shape = (config.latent_channels, geometry.latent_frames, height // config.vae_stride[1], width // config.vae_stride[2])
        chunk = ChunkSettings(
            settings.chunk_frames,
            geometry.motion_frames,
            settings.motion_latents,
            latent_shape,
            timesteps(settings.steps, settings.shift),
            settings.color_correction,
        )
        m = self.modules
        stages = [
            FlashHeadReferenceStage(),
            FlashHeadAudioStage(m["audio_encoder"], self.networks.extractor, buffer_frames=settings.audio_buffer_s * FPS, chunk_frames=settings.chunk_frames),
            FlashHeadChunkStage(m["dit"], m["vae"], chunk),
            FlashHeadFramesStage(),
        ]
        resolved = dataclasses.asdict(settings) | {"variant": self.networks.variant, "motion_frames": geometry.motion_frames, "new_frames": geometry.new_frames}
        return PipelineSpec(stages, BlockPlan(geometry.new_frames), self.fps, SAMPLE_RATE, settings.size, resolved)

    def reference(self, path: Path | None, options: FamilyOptions | Mapping[str, Any] | None = None) -> np.ndarray:
        """The reference image scaled to cover the output size and centre-cropped, as the reference prepares it."""
        size = Preset(**FlashHeadOptions.parse(options).with_preset(self.networks.variant)).size
        return load_reference(path if path is not None else DEFAULT_REFERENCE, size)
