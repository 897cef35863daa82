"""FlashVSR as a stream: low-resolution uint8 frames in, x4 frames out, chunk by chunk, in bounded memory.

One object per session. The reference's calls, on the absolute frame timeline:

- call 0 needs input frames 0-24: the LQ projection of frames 1-24 (6 groups of 4), noise latents 0-5, time
  positions 0-5; it gives output frames 0-20;
- call c >= 1 needs frames up to 8c+24: the projection of frames 8c+17 .. 8c+24, latents 4+2c and 5+2c (their
  time positions, without end), and gives output frames 8c+13 .. 8c+20.

Each call's latents are decoded at once (TCDecoder with its LQ frames, or the Wan VAE), colour-fixed against the
upscaled input frames of the same index, and turned to uint8. The session holds only what the next call needs:
the upscaled frames from 8c+21 on (at most 25 before the first call, 12 after), the KV cache, and the decoder's
per-frame memory. The reference pads the input with its last frame and drops the last frames it cannot finish;
``finish`` pads the same way, as far as needed, so the stream gives exactly as many frames as it was given (the
calls are causal: the frames the reference gives are the same).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import torch
from diffusers.models.autoencoders.autoencoder_kl_wan import AutoencoderKLWan

from avatarstream.components.wan.vae import DecoderCache, decode
from avatarstream.models.flashvsr.block_mask import topk_ratio
from avatarstream.models.flashvsr.color_fix import adain_fix
from avatarstream.models.flashvsr.config import CALL_LATENTS, FIRST_CALL_LATENTS, FRAMES_PER_LATENT, SIZE_MULTIPLE, TIMESTEP
from avatarstream.models.flashvsr.dit import FlashVSRDiT, KVCache, Sparsity
from avatarstream.models.flashvsr.frames import output_size, to_uint8, to_unit, upscale
from avatarstream.models.flashvsr.lq_proj import LQProjection
from avatarstream.models.flashvsr.tcdecoder import DecoderMemory, TCDecoder

__all__ = ["CallRecord", "FlashVSRStream", "Networks", "output_size"]

#: ``noise(first_latent_frame, count)`` -> noise latents [1, 16, count, H/8, W/8] of those latent frames.
Noise = Callable[[int, int], torch.Tensor]


class Networks(Protocol):
    """What a stream runs: FlashVSR's DiT, LQ projection, prompt embedding, and its decoder (TCDecoder or Wan VAE)."""

    dit: FlashVSRDiT
    lq_proj: LQProjection
    decoder: TCDecoder | AutoencoderKLWan
    prompt: torch.Tensor


@dataclass
class CallRecord:
    """What one call computed, for inspection (parity): its LQ tokens, velocity, block masks, x0 and decoded frames."""

    index: int
    lq_tokens: list[torch.Tensor]
    velocity: torch.Tensor
    masks: list[torch.Tensor]
    x0: torch.Tensor
    decoded: torch.Tensor  # [1, 3, F, H, W] before the colour fix
    output: torch.Tensor  # the same after it (if on)
    first_frame: int  # absolute index of the first decoded frame


def frames_needed(call: int) -> int:
    """Input frames call ``call`` needs (it reads frames up to this count - 1)."""
    return 25 + 8 * call


def first_output(call: int) -> int:
    """Absolute index of the first frame call ``call`` gives (the first gives 21, every later one 8)."""
    return 0 if call == 0 else 8 * call + 13


def first_latent(call: int) -> int:
    return 0 if call == 0 else FIRST_CALL_LATENTS - CALL_LATENTS + CALL_LATENTS * call


class FlashVSRStream:
    def __init__(
        self,
        networks: Networks,
        *,
        noise: Noise,
        sparse_ratio: float = 2.0,
        local_range: int = 11,
        kv_ratio: int = 3,
        color_fix: bool = True,
        device: torch.device,
        dtype: torch.dtype,
        kv_storage: torch.dtype | None = None,
        probe: Callable[[CallRecord], None] | None = None,
    ) -> None:
        """``kv_storage``: the dtype the DiT's KV cache is held in (None: ``dtype``; ``float8_e4m3fn``: fp8 with scales)."""
        self.networks = networks
        self.noise = noise
        self.sparse_ratio = sparse_ratio
        self.local_range = local_range
        self.kv_slabs = int(kv_ratio)
        self.color_fix = color_fix
        self.device = device
        self.dtype = dtype
        self.probe = probe
        dit = networks.dit
        with torch.inference_mode():
            self.step = dit.timestep(TIMESTEP, dtype, device)
            self.cross = dit.cross_kv(networks.prompt.to(device, dtype))
        self.cache = KVCache.empty(dit.config.num_layers, kv_storage)
        self.memory: DecoderMemory | DecoderCache = DecoderMemory() if isinstance(networks.decoder, TCDecoder) else DecoderCache.for_vae(networks.decoder)
        self.frames: list[torch.Tensor] = []  # upscaled uint8 frames [H, W, 3], the first at absolute index self.first
        self.first = 0
        self.received = 0
        self.calls = 0
        self.emitted = 0
        self.low_res: tuple[int, int] | None = None
        self.sparsity: Sparsity | None = None
        self.finished = False

    def push(self, frames: torch.Tensor) -> torch.Tensor:
        """Low-resolution uint8 frames [T, h, w, 3] in -> the uint8 frames [T', H, W, 3] now ready (CPU; T' may be 0)."""
        if self.finished:
            raise RuntimeError("this FlashVSR stream has finished; start another for more frames")
        with torch.inference_mode():
            out = [self._take(frame) for frame in self._checked(frames)]
        return self._joined([o for o in out if o is not None])

    def finish(self) -> torch.Tensor:
        """End of input: every frame not yet given, as many in all as were pushed (the last frame repeats as far as needed)."""
        if self.finished:
            raise RuntimeError("this FlashVSR stream has already finished")
        self.finished = True
        out: list[torch.Tensor] = []
        last = self.frames[-1] if self.frames else None
        with torch.inference_mode():
            while self.emitted < self.received and last is not None:
                ready = self._add(last)
                if ready is not None:
                    out.append(ready)
        frames = self._joined(out)
        return frames[: max(0, frames.shape[0] - (self.emitted - self.received))]

    def nbytes(self) -> int:
        """Bytes this session holds: the upscaled frames kept, the KV cache, the decoder's memory and the prompt's cross keys."""
        frames = sum(f.numel() * f.element_size() for f in self.frames)
        cross = sum(k.numel() * k.element_size() + v.numel() * v.element_size() for k, v in self.cross)
        return frames + self.cache.nbytes() + self.memory.nbytes() + cross + self.step.t_mod.numel() * self.step.t_mod.element_size()

    # -- one frame, one call ------------------------------------------------------------------------

    def _checked(self, frames: torch.Tensor) -> torch.Tensor:
        if frames.dtype != torch.uint8 or frames.ndim != 4 or frames.shape[-1] != 3:
            raise ValueError(f"FlashVSR takes uint8 frames [T, h, w, 3], got {frames.dtype} {list(frames.shape)}")
        size = (frames.shape[1], frames.shape[2])
        if self.low_res is None:
            width, height = output_size(size[1], size[0])
            if width < SIZE_MULTIPLE or height < SIZE_MULTIPLE:
                raise ValueError(f"frames of {size[1]}x{size[0]} are too small for FlashVSR: x4 they must cover {SIZE_MULTIPLE}x{SIZE_MULTIPLE}")
            self.low_res = size
            self.sparsity = Sparsity(self.local_range, topk_ratio(self.sparse_ratio, height, width), self.kv_slabs)
        elif size != self.low_res:
            raise ValueError(f"FlashVSR stream frames are {self.low_res[1]}x{self.low_res[0]}; got {size[1]}x{size[0]}")
        return frames

    def _take(self, frame: torch.Tensor) -> torch.Tensor | None:
        self.received += 1
        return self._add(upscale(frame[None])[0])

    def _add(self, hr: torch.Tensor) -> torch.Tensor | None:
        """One upscaled frame onto the timeline; the frames a call made ready, if it could run."""
        self.frames.append(hr)
        if self.first + len(self.frames) < frames_needed(self.calls):
            return None
        frames = self._call(self.calls)
        self.calls += 1
        keep_from = first_output(self.calls)
        del self.frames[: keep_from - self.first]
        self.first = keep_from
        self.emitted += frames.shape[0]
        return frames

    def _unit(self, start: int, stop: int) -> torch.Tensor:
        """Frames ``start`` .. ``stop`` - 1 as [1, 3, T, H, W] in [-1, 1] (a negative index stands for frame 0)."""
        picked = [self.frames[max(i, 0) - self.first] for i in range(start, stop)]
        return to_unit(torch.stack(picked), self.dtype, self.device)

    def _call(self, call: int) -> torch.Tensor:
        nets, sparsity = self.networks, self.sparsity
        assert sparsity is not None
        latent = first_latent(call)
        count = FIRST_CALL_LATENTS if call == 0 else CALL_LATENTS
        lq_start = FRAMES_PER_LATENT * latent + 1
        tokens = nets.lq_proj.project(self._unit(lq_start, lq_start + FRAMES_PER_LATENT * count))
        noise = self.noise(latent, count).to(self.device, self.dtype)
        masks: list[torch.Tensor] = []
        velocity = nets.dit(noise, self.step, self.cross, tokens, self.cache, latent, sparsity, masks if self.probe else None)
        x0 = noise - velocity
        cond_start = FRAMES_PER_LATENT * latent - (FRAMES_PER_LATENT - 1)
        if isinstance(nets.decoder, TCDecoder):
            assert isinstance(self.memory, DecoderMemory)
            decoded = nets.decoder.decode(x0, self._unit(cond_start, cond_start + FRAMES_PER_LATENT * count), self.memory)
        else:
            assert isinstance(self.memory, DecoderCache)
            decoded = decode(nets.decoder, x0, self.memory)
        start = first_output(call)
        fixed = adain_fix(decoded, self._unit(start, start + decoded.shape[2])) if self.color_fix else decoded
        if self.probe is not None:
            self.probe(CallRecord(call, tokens, velocity, masks, x0, decoded, fixed, start))
        return to_uint8(fixed).cpu()

    def _joined(self, parts: list[torch.Tensor]) -> torch.Tensor:
        if parts:
            return torch.cat(parts)
        height, width = (0, 0) if self.low_res is None else output_size(self.low_res[1], self.low_res[0])[::-1]
        return torch.empty(0, height, width, 3, dtype=torch.uint8)
