"""The demo family's options and defaults, apart from its models so that the CLI reads them without loading torch."""

from __future__ import annotations

from dataclasses import dataclass

from avatarstream.families.options import FamilyOptions, option
from avatarstream.families.quantization import quantize_modules_option, quantize_option

DEFAULT_CHUNK_FRAMES = 12
DEFAULT_INTERP_FRAMES = 3
DEFAULT_STEPS = 4
DEFAULT_SHIFT = 3.0
#: Motion frames from the previous N-chunk that condition the next one.
MOTION_FRAMES = 2
#: What --quantize applies to unless --quantize-modules says otherwise (the VAE has no linear layers; the encoders keep their precision).
QUANTIZED_BY_DEFAULT = ("a2v_dit", "sr_dit", "text_encoder")
DEFAULTS = {"chunk_frames": DEFAULT_CHUNK_FRAMES, "interp_frames": DEFAULT_INTERP_FRAMES, "steps": DEFAULT_STEPS, "shift": DEFAULT_SHIFT}


@dataclass(frozen=True)
class DemoOptions(FamilyOptions):
    """The demo family's options: chunking, sampler steps and shift, and a procedural identity to show."""

    chunk_frames: int | None = option(help=f"new frames per N-chunk ({DEFAULT_CHUNK_FRAMES})", minimum=1, maximum=1000)
    interp_frames: int | None = option(
        help=f"frames each I-chunk regenerates at a seam; 0 switches I-chunks off ({DEFAULT_INTERP_FRAMES})", minimum=0, maximum=1000
    )
    steps: int | None = option(help=f"flow-matching Euler steps ({DEFAULT_STEPS})", maximum=1000)
    shift: float | None = option(help=f"time shift of the flow-matching schedule ({DEFAULT_SHIFT:g})")
    quantize: str | None = quantize_option()
    quantize_modules: str | None = quantize_modules_option(QUANTIZED_BY_DEFAULT)
    avatar: int | None = option(
        help="show the procedural identity SEED (what the demo weights were trained on) instead of a reference image",
        minimum=0,
        scope="request",
        metavar="SEED",
    )
