"""FlashHead's published streaming settings (``flash_head/configs/infer_params.yaml``), one preset per variant.

``pro`` and ``lite`` set the same inference parameters: 33-frame chunks
continuing from 2 motion latents (5 frames under Pro's Wan VAE, 9 under
Lite's LTX VAE, so 28 or 24 new frames a chunk), 512x512, 4 steps at shift 5,
full colour correction, an 8-second audio buffer. The preset also picks the
variant's weights (``Model_Pro`` + ``VAE_Wan``, or ``Model_Lite`` + ``VAE_LTX``).
"""

from __future__ import annotations

from dataclasses import dataclass

from avatarstream.errors import InputError


@dataclass(frozen=True)
class Preset:
    size: tuple[int, int] = (512, 512)  # (width, height)
    chunk_frames: int = 33  # the reference's frame_num: video frames one DiT call makes, motion frames included
    motion_latents: int = 2  # motion_frames_latent_num: latent frames each chunk continues from
    steps: int = 4
    shift: float = 5.0
    color_correction: float = 1.0
    audio_buffer_s: int = 8  # cached_audio_duration: seconds of audio wav2vec2 re-encodes for every chunk


PRESETS = {"pro": Preset(), "lite": Preset()}
DEFAULT_PRESET = "pro"


@dataclass(frozen=True)
class ChunkGeometry:
    """The frames of one chunk under a VAE of temporal stride ``stride`` (4 Pro, 8 Lite)."""

    chunk_frames: int
    motion_latents: int
    stride: int

    @property
    def motion_frames(self) -> int:
        """Video frames the motion latents stand for: 1 + stride (n - 1) (5 Pro, 9 Lite)."""
        return (self.motion_latents - 1) * self.stride + 1

    @property
    def new_frames(self) -> int:
        """Frames each chunk adds to the video (its motion frames are dropped): 28 Pro, 24 Lite."""
        return self.chunk_frames - self.motion_frames

    @property
    def latent_frames(self) -> int:
        return (self.chunk_frames - 1) // self.stride + 1


def check_geometry(settings: Preset, stride: int, spatial: int) -> ChunkGeometry:
    """The chunk's frames for a VAE of temporal ``stride``, and the size a multiple of ``spatial`` pixels; InputErrors name the flag."""
    width, height = settings.size
    if width < spatial or height < spatial or width % spatial or height % spatial or width * height > 1536 * 1536:
        raise InputError(f"--size must be WIDTHxHEIGHT in multiples of {spatial} up to 1536x1536 for this variant (e.g. 512x512); got {width}x{height}")
    geometry = ChunkGeometry(settings.chunk_frames, settings.motion_latents, stride)
    if (settings.chunk_frames - 1) % stride:
        raise InputError(f"--chunk-frames must be 1 + {stride}k for this variant's VAE (e.g. 33); got {settings.chunk_frames}")
    if geometry.new_frames < 1:
        raise InputError(
            f"--motion-latents {settings.motion_latents} stand for {geometry.motion_frames} frames, which leaves nothing new of a "
            f"{settings.chunk_frames}-frame chunk; use fewer motion latents or longer chunks"
        )
    if settings.audio_buffer_s * 25 < settings.chunk_frames:
        raise InputError(f"--audio-buffer must hold a chunk ({settings.chunk_frames} frames at 25 fps); got {settings.audio_buffer_s} s")
    return geometry
