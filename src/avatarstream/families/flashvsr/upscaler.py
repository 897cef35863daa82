"""The ``flashvsr`` upscaler: FlashVSR (v1) as a streaming one-step super-resolution stage after any family.

The DiT, the LQ projection and the decoder (TCDecoder in ``tiny`` mode, the
Wan 2.1 VAE in ``full`` mode) are runtime modules named ``flashvsr_dit``,
``flashvsr_lq_proj`` and ``flashvsr_decoder``, so ``--residency`` places them
beside the family's (``--residency dit=offloaded,flashvsr_dit=offloaded`` hands
one GPU from the base model to FlashVSR chunk by chunk). Frames come out 4x wider and
taller, centre-cropped to multiples of 128 as the reference crops them. ``--upscale-quantize``
holds the DiT's and the LQ projection's linear layers in int8 or fp8 (``--upscale-quantize-modules``
chooses others), at load, as a family's ``--quantize`` does; ``--upscale-kv-cache-dtype fp8`` holds
each session's KV cache in fp8.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

import torch

from avatarstream.components.kv_storage import named
from avatarstream.components.wan.layout import random_mark
from avatarstream.errors import InputError
from avatarstream.families.builtin_upscalers import BUILTIN_UPSCALERS
from avatarstream.families.flashvsr.layout import resolve
from avatarstream.families.flashvsr.load import LATENT_CHANNELS
from avatarstream.families.flashvsr.networks import FlashVSRNetworks
from avatarstream.families.flashvsr.options import QUANTIZED_BY_DEFAULT, FlashVSROptions
from avatarstream.families.options import FamilyOptions
from avatarstream.families.quantization import QUANTIZED_MARK, quantize_loaded
from avatarstream.families.upscaler import UpscaleSpec
from avatarstream.models.flashvsr.config import SIZE_MULTIPLE
from avatarstream.models.flashvsr.frames import output_size
from avatarstream.models.flashvsr.stream import FlashVSRStream
from avatarstream.runtime.module import Module
from avatarstream.stages.common import device_and_dtype
from avatarstream.stages.upscale.flashvsr import FlashVSRStage, session_noise

#: One latent frame is 8x8 pixels (of the Wan VAE's 16 channels).
LATENT_STRIDE = 8


RANDOM_WARNING = (
    "these FlashVSR weights are random ({how}): the upscaled frames are noise; they are for tests. "
    "Download the real ones (docs/models/flashvsr.md) and give their folder with --upscale-weights DIR"
)


def modules_of(networks: FlashVSRNetworks) -> dict[str, Module]:
    """The networks as runtime modules, named apart from any family's."""
    named = {"flashvsr_dit": networks.dit, "flashvsr_lq_proj": networks.lq_proj, "flashvsr_decoder": networks.decoder}
    return {name: Module(name, network) for name, network in named.items()}


@dataclass
class FlashVSRUpscaler:
    networks: FlashVSRNetworks
    modules: dict[str, Module]
    weights: str
    warnings: list[str] = field(default_factory=list)

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
        layout = resolve(weights, parsed.decoder_mode)
        networks = FlashVSRNetworks.load(layout, parsed.torch_dtype(device))
        random = random_mark(layout.dit)
        warnings = [RANDOM_WARNING.format(how=random)] if random is not None else []
        upscaler = cls(networks, modules_of(networks), f"{weights} ({layout.mode} mode)", warnings)
        try:
            quantized = quantize_loaded(upscaler.modules, parsed.quantize, parsed.quantize_modules, QUANTIZED_BY_DEFAULT, device)
        except InputError as err:  # its messages name a family's flags; an upscaler's are given after --upscale-
            raise InputError(str(err).replace("--quantize", "--upscale-quantize")) from None
        if quantized is not None:
            upscaler.weights += QUANTIZED_MARK + quantized
        return upscaler

    def build(self, frame_size: tuple[int, int], fps: int, options: FamilyOptions) -> UpscaleSpec:
        parsed = FlashVSROptions.parse(options)
        width, height = output_size(*frame_size)
        if width < SIZE_MULTIPLE or height < SIZE_MULTIPLE:
            raise InputError(f"frames of {frame_size[0]}x{frame_size[1]} are too small for FlashVSR: 4x they must cover {SIZE_MULTIPLE}x{SIZE_MULTIPLE}")
        settings = parsed.settings()
        latent_frame = (1, LATENT_CHANNELS, 1, height // LATENT_STRIDE, width // LATENT_STRIDE)
        kv = named(parsed.kv_cache_dtype)
        dit = self.modules["flashvsr_dit"]

        def open_stream(seed: int) -> FlashVSRStream:
            device, dtype = device_and_dtype(dit)
            return FlashVSRStream(
                self.networks, noise=session_noise(seed, device, latent_frame), **dataclasses.asdict(settings), device=device, dtype=dtype, kv_storage=kv
            )

        stage = FlashVSRStage(tuple(self.modules.values()), open_stream)
        resolved = {"mode": self.networks.mode, **dataclasses.asdict(settings)} | ({"kv_cache_dtype": parsed.kv_cache_dtype} if kv is not None else {})
        return UpscaleSpec([stage], (width, height), resolved)
