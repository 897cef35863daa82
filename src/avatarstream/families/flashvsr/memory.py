"""What FlashVSR holds, computed from its sizes: weights per module, and what one session keeps between calls.

A session's largest part is the DiT's KV cache: ``kv_ratio`` time slabs (2
latent frames each) of keys and values per layer, kept between calls. The
cross-attention keys and values of the fixed prompt are computed once per
session. ``tests/families/test_flashvsr_stream.py`` holds these figures against
what a stream measures (``FlashVSRStream.nbytes``).
"""

from __future__ import annotations

from dataclasses import dataclass

from avatarstream.models.flashvsr.config import CALL_LATENTS, PIXELS_PER_TOKEN, DiTConfig
from avatarstream.models.flashvsr.frames import output_size

#: The prompt embedding's tokens (the reference's posi_prompt.pth: [1, 512, text_dim]).
PROMPT_TOKENS = 512
#: Upscaled input frames a session holds at most (before its first call).
HELD_FRAMES = 25


@dataclass(frozen=True)
class SessionBytes:
    kv_cache: int
    cross_kv: int
    held_frames: int

    @property
    def total(self) -> int:
        return self.kv_cache + self.cross_kv + self.held_frames


def session_bytes(width: int, height: int, config: DiTConfig, kv_ratio: int, element_size: int) -> SessionBytes:
    """What one session holds between calls for low-resolution frames of ``width`` x ``height`` (its output is 4x)."""
    out_w, out_h = output_size(width, height)
    tokens_per_slab = CALL_LATENTS * (out_w // PIXELS_PER_TOKEN) * (out_h // PIXELS_PER_TOKEN)
    kv = 2 * config.num_layers * kv_ratio * tokens_per_slab * config.dim * element_size
    cross = 2 * config.num_layers * PROMPT_TOKENS * config.dim * element_size
    return SessionBytes(kv, cross, HELD_FRAMES * out_w * out_h * 3)
