"""The public configurations of this architecture, in video frames as their authors state them.

``infinitetalk``: the reference's defaults (81-frame chunks, 9 motion frames,
40 steps, text guidance 5, audio guidance 4, shift 7 at 480p).
``flashtalk``: SoulX-FlashTalk's published real-time settings (4 steps, no
guidance, 33-frame chunks, 5 motion frames, shift 5), which its distilled
weights need. Every setting can be overridden.
"""

from __future__ import annotations

from dataclasses import dataclass

from avatarstream.components.wan.config import VAE_SPATIAL_STRIDE, VAE_TEMPORAL_STRIDE
from avatarstream.errors import InputError

#: The reference's default negative prompt: InfiniteTalk's own config (wan_multitalk_14B), in English, where the shared
#: Wan config has a Chinese one.
NEGATIVE_PROMPT = (
    "bright tones, overexposed, static, blurred details, subtitles, style, works, paintings, images, static, overall gray, "
    "worst quality, low quality, JPEG compression residue, ugly, incomplete, extra fingers, poorly drawn hands, "
    "poorly drawn faces, deformed, disfigured, misshapen limbs, fused fingers, still picture, messy background, "
    "three legs, many people in the background, walking backwards"
)
#: Pixels per DiT token side: the VAE's stride times the patch size.
SIZE_MULTIPLE = VAE_SPATIAL_STRIDE * 2


@dataclass(frozen=True)
class Preset:
    chunk_frames: int  # video frames per chunk window (the reference's frame_num)
    motion_frames: int  # video frames of the previous chunk each chunk is conditioned on
    steps: int
    shift: float
    text_guidance: float
    audio_guidance: float
    size: tuple[int, int]  # (width, height)
    audio_window_s: float
    audio_lookahead: int = 12  # video frames; see docs/models/infinitetalk.md for the measurement behind it
    interp_frames: int = 0  # video frames each I-chunk regenerates; off until measured on real weights
    motion: str = "reencode"
    fidelity: str = "streaming"
    color_correction: float | None = None  # None: the fidelity's default (COLOR_CORRECTION)


#: Colour correction strength by fidelity when --color-correction is not given (docs/models/infinitetalk.md measures it).
COLOR_CORRECTION = {"reference": 1.0, "streaming": 0.0}

PRESETS = {
    "infinitetalk": Preset(81, 9, 40, 7.0, 5.0, 4.0, (832, 480), audio_window_s=8.0),
    "flashtalk": Preset(33, 5, 4, 5.0, 1.0, 1.0, (768, 448), audio_window_s=8.0),
}


def latent_frames(video_frames: int, what: str) -> int:
    """Video frames 1 + 4k -> k + 1 latent frames; anything else is refused with the valid values."""
    if video_frames < 1 or (video_frames - 1) % VAE_TEMPORAL_STRIDE:
        nearest = max(1, round((video_frames - 1) / VAE_TEMPORAL_STRIDE)) * VAE_TEMPORAL_STRIDE + 1
        raise InputError(f"{what} must be 1 + {VAE_TEMPORAL_STRIDE}k video frames (the VAE's stride): 5, 9, 13, ..., e.g. {nearest}; got {video_frames}")
    return 1 + (video_frames - 1) // VAE_TEMPORAL_STRIDE


def check_geometry(chunk_frames: int, motion_frames: int, interp_frames: int) -> tuple[int, int, int]:
    """(L, m, a) in latent frames, with one message that states the whole valid range."""
    window = latent_frames(chunk_frames, "--chunk-frames")
    motion = latent_frames(motion_frames, "--motion-frames")
    if motion >= window:
        raise InputError(
            f"--motion-frames ({motion_frames}) must be fewer than --chunk-frames ({chunk_frames}): with {motion_frames} motion frames, "
            f"--chunk-frames can be {motion_frames + VAE_TEMPORAL_STRIDE}, {motion_frames + 2 * VAE_TEMPORAL_STRIDE}, ..."
        )
    own = window - motion
    if own < motion:
        least = motion_frames + (2 * motion - 1) * VAE_TEMPORAL_STRIDE
        raise InputError(
            f"--chunk-frames ({chunk_frames}) must give at least as many new frames as motion frames: with {motion_frames} "
            f"motion frames, --chunk-frames can be {least}, {least + VAE_TEMPORAL_STRIDE}, ..."
        )
    if interp_frames < 0 or interp_frames % VAE_TEMPORAL_STRIDE or interp_frames // VAE_TEMPORAL_STRIDE >= own:
        raise InputError(
            f"--interp-frames must be a multiple of {VAE_TEMPORAL_STRIDE} below {own * VAE_TEMPORAL_STRIDE} "
            f"(the new frames of a {chunk_frames}-frame chunk with {motion_frames} motion frames); got {interp_frames}; 0 switches I-chunks off"
        )
    return own, motion, interp_frames // VAE_TEMPORAL_STRIDE


def check_size(size: tuple[int, int]) -> tuple[int, int]:
    width, height = size
    if width < SIZE_MULTIPLE or height < SIZE_MULTIPLE or width % SIZE_MULTIPLE or height % SIZE_MULTIPLE or width * height > 1920 * 1088:
        raise InputError(f"--size must be WIDTHxHEIGHT in multiples of {SIZE_MULTIPLE} up to 1920x1088 (e.g. 832x480, 768x448); got {width}x{height}")
    return size
