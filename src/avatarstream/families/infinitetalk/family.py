"""The ``infinitetalk`` family: Wan2.1-I2V-14B + the InfiniteTalk audio adapter in avatarstream's chunk loop.

Weights come from the folders users download (either layout of the Wan base);
the chunk loop, constant memory, runtime policies and publishing are the
framework's. There is no super-resolution stage: the DiT generates at the
output size and the Wan VAE decodes it causally with a per-session cache.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import torch

from avatarstream.components.wan.config import VAE_SPATIAL_STRIDE
from avatarstream.components.wan.frames import FRAMES
from avatarstream.components.wan.layout import random_mark
from avatarstream.errors import InputError
from avatarstream.families.base import OptionsLike
from avatarstream.families.builtin import BUILTIN
from avatarstream.families.chunk_plan import ChunkPlan
from avatarstream.families.infinitetalk.buckets import nearest_bucket, resize_and_center_crop
from avatarstream.families.infinitetalk.layout import resolve
from avatarstream.families.infinitetalk.networks import InfiniteTalkNetworks
from avatarstream.families.infinitetalk.options import QUANTIZED_BY_DEFAULT, InfiniteTalkOptions
from avatarstream.families.infinitetalk.presets import COLOR_CORRECTION, NEGATIVE_PROMPT, Preset, check_geometry, check_size
from avatarstream.families.infinitetalk.published import describe, published_files, published_quantization
from avatarstream.families.infinitetalk.sequence_parallel import split_dit
from avatarstream.families.options import FamilyOptions
from avatarstream.families.quantization import QUANTIZED_MARK, quantize_loaded
from avatarstream.models.infinitetalk.audio_features import FPS, SAMPLE_RATE
from avatarstream.models.infinitetalk.config import AUDIO_WINDOW
from avatarstream.models.infinitetalk.sampler import Guidance, timesteps
from avatarstream.pipeline.pipeline import Pipeline
from avatarstream.pipeline.spec import PipelineSpec
from avatarstream.runtime.module import Module
from avatarstream.runtime.parallel.guidance import GuidedPredictions
from avatarstream.runtime.parallel.layout import ParallelLayout
from avatarstream.runtime.parallel.ulysses import SplitsSequence
from avatarstream.sources.bundled import DEFAULT_REFERENCE
from avatarstream.sources.reference import load_reference_image, open_reference_image
from avatarstream.stages.infinitetalk.context import WanAudioContextStage
from avatarstream.stages.infinitetalk.decode import WanWindowDecodeStage
from avatarstream.stages.infinitetalk.generate import WanAudioToVideoStage, WanChunkAudioToVideoStage
from avatarstream.stages.infinitetalk.reference import WanPromptStage, WanReferenceStage
from avatarstream.stages.infinitetalk.whole_audio import WanWholeAudioContextStage
from avatarstream.stages.wan_decode import WanDecodeStage

if TYPE_CHECKING:
    from avatarstream.parity.checks import Check
    from avatarstream.parity.fixture import GoldenSet

DEFAULT_PRESET = "infinitetalk"
RANDOM_WARNING = (
    "these InfiniteTalk weights are random ({how}): the video is noise, at the speed of the real thing; they are for tests. "
    "Download the real weights (docs/models/infinitetalk.md) and give their folder with --weights ROOT"
)


@dataclass
class InfiniteTalkFamily:
    """The loaded networks as Modules, and how they become a pipeline."""

    networks: InfiniteTalkNetworks
    modules: dict[str, Module]
    weights: str
    warnings: list[str] = field(default_factory=list)  # about the weights, for every run (input_warnings.py)

    name = "infinitetalk"
    fps = FPS
    Options: ClassVar[type[InfiniteTalkOptions]] = InfiniteTalkOptions
    summary: ClassVar[str] = BUILTIN["infinitetalk"].summary
    weights_help: ClassVar[str] = BUILTIN["infinitetalk"].weights_help
    golden_repos: ClassVar[tuple[str, ...]] = ("MeiGen-AI/InfiniteTalk",)  # `avatarstream parity` runs their golden sets here

    @staticmethod
    def parity(gs: GoldenSet, on_case: Callable[[str], None]) -> list[Check]:
        from avatarstream.families.infinitetalk.parity import run_cases  # parity code loads only for `avatarstream parity`

        return run_cases(gs, on_case)

    @staticmethod
    def golden_render_arguments(gs: GoldenSet) -> dict[str, Any]:
        from avatarstream.families.infinitetalk.parity import render_arguments

        return render_arguments(gs)

    def raw_frames(self, reference_image: np.ndarray, samples: np.ndarray, *, options: OptionsLike = None, seed: int = 0) -> Iterator[np.ndarray]:
        """The overhead benchmark's baseline: the frames ``options`` make, from the networks called in a plain loop."""
        from avatarstream.families.infinitetalk.raw_loop import raw_frames  # benchmark code loads only for `avatarstream bench`

        return raw_frames(self.networks, self.resolve_options(InfiniteTalkOptions.parse(options)), self.fps, reference_image, samples, seed=seed)

    def audio_window_errors(self, pipeline: Pipeline, samples: np.ndarray, spans: Sequence[tuple[float, int]]) -> dict[tuple[float, int], dict[str, float]]:
        """The audio-window benchmark: per (window seconds, look-ahead frames), how far ``pipeline``'s rolling-window audio
        features are from whole-file ones."""
        from avatarstream.families.infinitetalk.audio_window import window_errors

        stage = next(s for s in pipeline.stages if isinstance(s, WanAudioContextStage))
        return window_errors(self.modules["audio_encoder"], stage, pipeline.plan, samples, spans)

    @classmethod
    def load(cls, root: Path | None, options: InfiniteTalkOptions | None = None, *, device: torch.device | None = None, seed: int = 0) -> InfiniteTalkFamily:
        """The networks from the download folders (``root``, or each named by the load options), in the options' precision."""
        options = options or InfiniteTalkOptions()
        device = device or torch.device("cpu")
        published = published_files(options.quantized_dit, options.quantize, options.quantize_modules, device) if options.quantized_dit else None
        # the publisher's quantized DiT holds the adapter merged in: the adapter's own download is then not needed
        layout = resolve(root, base=options.base, adapter=published.dit if published else options.adapter, audio_encoder=options.audio_encoder)
        dtype = options.torch_dtype(device)
        networks = InfiniteTalkNetworks.load(layout, dtype, published=published)
        random = random_mark(layout.adapter)
        warnings = [RANDOM_WARNING.format(how=random)] if random is not None else []
        files = describe(published) if published else str(layout.adapter)
        family = cls.from_networks(networks, f"{layout.base} ({layout.layout} layout), {files}, {layout.audio_encoder}", warnings=warnings)
        came_quantized = published_quantization(published, dtype) if published else None
        quantized = quantize_loaded(family.modules, options.quantize, options.quantize_modules, QUANTIZED_BY_DEFAULT, device, came_quantized=came_quantized)
        if quantized is not None:
            family.weights += QUANTIZED_MARK + quantized
        return family

    @classmethod
    def from_networks(cls, networks: InfiniteTalkNetworks, weights: str, *, warnings: list[str] | None = None) -> InfiniteTalkFamily:
        """The family around loaded (or benchmark-built) networks, each a runtime Module; ``warnings``: about the weights."""
        assert networks.text_encoder is not None and networks.image_encoder is not None
        modules = {
            "dit": Module("dit", networks.dit),
            "vae": Module("vae", networks.vae),
            "audio_encoder": Module("audio_encoder", networks.audio_encoder),
            "text_encoder": Module("text_encoder", networks.text_encoder.network),
            "image_encoder": Module("image_encoder", networks.image_encoder.network),
        }
        return cls(networks, modules, weights, warnings=list(warnings or []))

    def resolve_options(self, options: InfiniteTalkOptions) -> Preset:
        """The preset with the user's overrides applied and checked."""
        settings = Preset(**{k: v for k, v in options.with_preset(DEFAULT_PRESET).items() if k != "negative_prompt"})
        if settings.color_correction is None:
            settings = dataclasses.replace(settings, color_correction=COLOR_CORRECTION[settings.fidelity])
        check_geometry(settings.chunk_frames, settings.motion_frames, settings.interp_frames)
        check_size(settings.size)
        if settings.motion not in ("reencode", "latent"):
            raise InputError(f"--motion must be reencode or latent, got {settings.motion!r}")
        if not math.isfinite(settings.audio_window_s) or settings.audio_window_s < 1.0:
            raise InputError(f"--audio-window must be at least 1 second of audio, got {settings.audio_window_s}")
        if not AUDIO_WINDOW // 2 <= settings.audio_lookahead <= 10 * self.fps:
            raise InputError(
                f"--audio-lookahead must be {AUDIO_WINDOW // 2} to {10 * self.fps} frames (the per-frame windows reach {AUDIO_WINDOW // 2} ahead), got {settings.audio_lookahead}"
            )
        if settings.fidelity == "reference" and options.motion == "latent":
            raise InputError("--fidelity reference re-encodes motion frames from each chunk's decode, as the reference CLI does; drop --motion latent")
        if settings.fidelity == "reference" and settings.interp_frames:
            raise InputError(f"--fidelity reference has no I-chunks, as the reference CLI has none; drop --interp-frames {settings.interp_frames} (or give 0)")
        return settings

    def build(self, options: FamilyOptions) -> PipelineSpec:
        options = InfiniteTalkOptions.parse(options)
        settings = self.resolve_options(options)
        own, motion, interp = check_geometry(settings.chunk_frames, settings.motion_frames, settings.interp_frames)
        try:
            schedule = timesteps(settings.steps, settings.shift)
        except ValueError as exc:
            raise InputError(f"invalid sampler setting: {exc}") from exc
        width, height = settings.size
        guidance = Guidance(settings.text_guidance, settings.audio_guidance)
        guided = GuidedPredictions(len(guidance.predictions))  # what --parallel cfg=C shares out
        m, n = self.modules, self.networks
        assert n.text_encoder is not None and n.image_encoder is not None  # from_networks requires both
        window_video = FRAMES.window_video_range(0, own + motion)
        window_frames = window_video[1] - window_video[0]  # video frames of a chunk window (the reference's frame_num)
        strength = settings.color_correction
        assert strength is not None  # resolve_options fills it in
        if settings.fidelity == "reference":
            stages = [
                WanReferenceStage(m["vae"], m["image_encoder"], n.image_encoder, window_frames),
                WanPromptStage(m["text_encoder"], n.text_encoder, options.negative_prompt if options.negative_prompt is not None else NEGATIVE_PROMPT),
                WanWholeAudioContextStage(m["audio_encoder"], FRAMES, settings.steps),
                WanChunkAudioToVideoStage(m["dit"], m["vae"], FRAMES, schedule, guidance, guided, motion_frames=settings.motion_frames, strength=strength),
                WanWindowDecodeStage(m["vae"], FRAMES, strength),
            ]
            frame_count = lambda duration_s: int(duration_s * self.fps)
        else:
            latent_shape = (n.vae.config["z_dim"], height // VAE_SPATIAL_STRIDE, width // VAE_SPATIAL_STRIDE)
            stages = [
                WanReferenceStage(m["vae"], m["image_encoder"], n.image_encoder, window_frames),
                WanPromptStage(m["text_encoder"], n.text_encoder, options.negative_prompt if options.negative_prompt is not None else NEGATIVE_PROMPT),
                WanAudioContextStage(
                    m["audio_encoder"], FRAMES, latent_shape, fps=self.fps, window_s=settings.audio_window_s, lookahead_frames=settings.audio_lookahead
                ),
                WanAudioToVideoStage(m["dit"], m["vae"], FRAMES, schedule, guidance, guided, reencode=settings.motion == "reencode"),
                WanDecodeStage(m["vae"], strength),
            ]
            frame_count = None
        plan = ChunkPlan(own, interp, motion, first_cond=1)
        reference = settings.fidelity == "reference"

        def check_layout(layout: ParallelLayout) -> None:
            if reference and layout.decode_rank is not None:
                raise InputError("--fidelity reference decodes each chunk window whole on the generating ranks; drop the decode rank from --parallel")

        parallel: dict[str, list[object]] = {"sp": [SplitsSequence("dit", m["dit"].network, split_dit)], "cfg": [guided]}
        return PipelineSpec(stages, plan, self.fps, SAMPLE_RATE, settings.size, dataclasses.asdict(settings), FRAMES, frame_count, check_layout, parallel)

    def reference(self, path: Path | None, options: FamilyOptions | Mapping[str, Any] | None = None) -> np.ndarray:
        """The reference image resized and centre-cropped to the output size.

        At the reference fidelity as the reference CLI does it; without ``--size`` its size bucket sets the output size.
        """
        path = path if path is not None else DEFAULT_REFERENCE
        parsed = InfiniteTalkOptions.parse(options)
        settings = self.resolve_options(parsed)
        if settings.fidelity != "reference":
            return load_reference_image(path, settings.size)
        image = open_reference_image(path)
        height, width = nearest_bucket(image.height, image.width) if parsed.size is None else parsed.size[::-1]
        return resize_and_center_crop(image, height, width)
