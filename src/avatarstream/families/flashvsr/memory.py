"""What FlashVSR holds, computed from its sizes: weights per module, and what one session keeps between calls.

A session's largest part is the DiT's KV cache: ``kv_ratio`` time slabs (2
latent frames each) of keys and values per layer, kept between calls, in the
weights' precision or as its KV cache dtype says (fp8: 1 byte a value and a
float32 scale per token and head). The cross-attention keys and values of the
fixed prompt are computed once per session. ``tests/families/test_flashvsr_memory.py``
holds these figures against what a stream holds.
"""

from __future__ import annotations

from dataclasses import dataclass

from avatarstream.models.flashvsr.config import CALL_LATENTS, PIXELS_PER_TOKEN, DiTConfig
from avatarstream.models.flashvsr.frames import output_size

#: The prompt embedding's tokens (the reference's posi_prompt.pth: [1, 512, text_dim]).
PROMPT_TOKENS = 512
#: Upscaled input frames a session holds at most (before its first call).
HELD_FRAMES = 25
#: Bytes a value of the KV cache takes in each dtype it may be held in.
KV_VALUE_BYTES = {"fp32": 4, "bf16": 2, "fp16": 2, "fp8": 1}
#: Bytes of the scale an fp8 cache keeps per token and head (float32).
FP8_SCALE_BYTES = 4


@dataclass(frozen=True)
class SessionBytes:
    kv_cache: int
    cross_kv: int
    held_frames: int

    @property
    def total(self) -> int:
        return self.kv_cache + self.cross_kv + self.held_frames


def session_bytes(width: int, height: int, config: DiTConfig, kv_ratio: int, element_size: int, kv_cache_dtype: str | None = None) -> SessionBytes:
    """What one session holds between calls for low-resolution frames of ``width`` x ``height`` (its output is 4x), in
    weights of ``element_size`` bytes; ``kv_cache_dtype`` (``fp8`` or a float dtype's name): how the KV cache is held (None:
    as the weights)."""
    out_w, out_h = output_size(width, height)
    tokens_per_slab = CALL_LATENTS * (out_w // PIXELS_PER_TOKEN) * (out_h // PIXELS_PER_TOKEN)
    per_token = config.dim * (element_size if kv_cache_dtype is None else KV_VALUE_BYTES[kv_cache_dtype])
    per_token += config.num_heads * FP8_SCALE_BYTES if kv_cache_dtype == "fp8" else 0
    kv = 2 * config.num_layers * kv_ratio * tokens_per_slab * per_token
    cross = 2 * config.num_layers * PROMPT_TOKENS * config.dim * element_size
    return SessionBytes(kv, cross, HELD_FRAMES * out_w * out_h * 3)
