"""The ``flashvsr`` upscaler: FlashVSR (v1) as a streaming one-step super-resolution stage after any family.

The DiT, the LQ projection and the decoder (TCDecoder in ``tiny`` mode, the
Wan 2.1 VAE in ``full`` mode) are runtime modules named ``sr_dit``,
``sr_lq_proj`` and ``sr_decoder``, so ``--residency`` places them beside the
family's (``--residency dit=offloaded,sr_dit=offloaded`` hands one GPU from
the base model to FlashVSR chunk by chunk). Frames come out 4x wider and
taller, centre-cropped to multiples of 128 as the reference crops them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import torch

from avatarstream.errors import InputError
from avatarstream.families.builtin_upscalers import BUILTIN_UPSCALERS
from avatarstream.families.flashvsr.layout import resolve
from avatarstream.families.flashvsr.networks import FlashVSRNetworks
from avatarstream.families.flashvsr.options import FlashVSROptions
from avatarstream.families.options import FamilyOptions
from avatarstream.families.upscaler import UpscaleSpec
from avatarstream.models.flashvsr.config import SIZE_MULTIPLE
from avatarstream.models.flashvsr.frames import output_size
from avatarstream.runtime.module import Module
from avatarstream.stages.upscale.flashvsr import FlashVSRStage, StreamSettings

#: One latent frame is 8x8 pixels of 16 channels.
LATENT_STRIDE = 8
LATENT_CHANNELS = 16
DEFAULTS = StreamSettings(sparse_ratio=2.0, local_range=11, kv_ratio=3, color_fix=True)


@dataclass
class FlashVSRUpscaler:
    networks: FlashVSRNetworks
    modules: dict[str, Module]
    weights: str

    name = "flashvsr"
    Options: ClassVar[type[FlashVSROptions]] = FlashVSROptions
    summary: ClassVar[str] = BUILTIN_UPSCALERS["flashvsr"].summary
    weights_help: ClassVar[str] = BUILTIN_UPSCALERS["flashvsr"].weights_help
    golden_repos: ClassVar[tuple[str, ...]] = ("OpenImagingLab/FlashVSR",)

    @staticmethod
    def parity(gs: object, on_case: object) -> object:
        from avatarstream.families.flashvsr.parity import run_cases  # parity code loads only for `avatarstream parity`

        return run_cases(gs, on_case)  # type: ignore[arg-type]

    @classmethod
    def load(cls, weights: Path | None, options: FamilyOptions, *, device: torch.device, seed: int = 0) -> FlashVSRUpscaler:
        parsed = FlashVSROptions.parse(options)
        check = BUILTIN_UPSCALERS["flashvsr"].check_weights
        assert check is not None, "flashvsr's folder is checked before it loads"
        check(weights, parsed)
        assert weights is not None
        layout = resolve(weights, parsed.mode or "tiny")
        networks = FlashVSRNetworks.load(layout, parsed.torch_dtype(device))
        modules = {
            "sr_dit": Module("sr_dit", networks.dit),
            "sr_lq_proj": Module("sr_lq_proj", networks.lq_proj),
            "sr_decoder": Module("sr_decoder", networks.decoder),
        }
        return cls(networks, modules, f"{weights} ({layout.mode} mode)")

    def build(self, frame_size: tuple[int, int], fps: int, options: FamilyOptions) -> UpscaleSpec:
        parsed = FlashVSROptions.parse(options)
        width, height = output_size(*frame_size)
        if width < SIZE_MULTIPLE or height < SIZE_MULTIPLE:
            raise InputError(f"frames of {frame_size[0]}x{frame_size[1]} are too small for FlashVSR: 4x they must cover {SIZE_MULTIPLE}x{SIZE_MULTIPLE}")
        settings = StreamSettings(
            sparse_ratio=parsed.sparse_ratio if parsed.sparse_ratio is not None else DEFAULTS.sparse_ratio,
            local_range=parsed.local_range if parsed.local_range is not None else DEFAULTS.local_range,
            kv_ratio=parsed.kv_ratio if parsed.kv_ratio is not None else DEFAULTS.kv_ratio,
            color_fix=parsed.color_fix if parsed.color_fix is not None else DEFAULTS.color_fix,
        )
        m = self.modules
        latent_frame = (1, LATENT_CHANNELS, 1, height // LATENT_STRIDE, width // LATENT_STRIDE)
        stage = FlashVSRStage(m["sr_dit"], m["sr_lq_proj"], m["sr_decoder"], self.networks, settings, latent_frame)
        return UpscaleSpec([stage], (width, height), {"mode": self.networks.mode, **vars(settings)})
