"""The Wan2.2-S2V DiT run block-causally (LiveAvatar): one block of latent frames per call, against KV caches.

Each call sees only the block's tokens as queries; its keys and values are the
step cache (earlier blocks) followed by the attention sink (reference frame +
FramePack motion tokens). Modulation has two segments: the block's tokens get
their frame's timestep, the sink's tokens timestep 0. Audio enters after
chosen layers through a cross-attention per latent frame, after an adaptive
norm driven by a global audio token.

Two precision quirks of the reference, kept because its outputs (and the
distilled weights) depend on them: RoPE cos/sin are float16 values (see
``rope.py``), and the input of the text cross-attention's norm is rounded to
bfloat16.

Parameter names are the original checkpoint's (``casual_audio_encoder`` included).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from diffusers.models.normalization import AdaLayerNorm
from torch import nn

from avatarstream.models.liveavatar.audio_encoder import CausalAudioEncoder
from avatarstream.models.liveavatar.caches import SinkCache, StepCache
from avatarstream.models.liveavatar.config import MOTION_FRAMES, SINK_REF_POSITION, S2VConfig
from avatarstream.models.liveavatar.framepack import FramePackMotioner
from avatarstream.models.liveavatar.rope import Positions, apply_rope, block_positions, motion_positions, reference_positions, rope_cos_sin

#: Parameters kept in float32 whatever the precision (the reference computes modulation in float32).
FP32_PARAMETERS = ("modulation",)


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        xf = x.float()
        return (xf * torch.rsqrt(xf.pow(2).mean(dim=-1, keepdim=True) + self.eps)).type_as(x) * self.weight


def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """[B, L, heads, d] each -> [B, Lq, heads * d]."""
    out = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2))
    return out.transpose(1, 2).flatten(2)


class Attention(nn.Module):
    """q/k/v/o projections with RMS-normed queries and keys (over all heads)."""

    def __init__(self, dim: int, num_heads: int, eps: float) -> None:
        super().__init__()
        self.num_heads = num_heads
        self.q, self.k, self.v, self.o = (nn.Linear(dim, dim) for _ in range(4))
        self.norm_q = RMSNorm(dim, eps)
        self.norm_k = RMSNorm(dim, eps)

    def qkv(self, x: torch.Tensor, context: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        src = x if context is None else context
        heads = (self.num_heads, -1)
        return self.norm_q(self.q(x)).unflatten(-1, heads), self.norm_k(self.k(src)).unflatten(-1, heads), self.v(src).unflatten(-1, heads)

    def cross(self, x: torch.Tensor, context: torch.Tensor) -> torch.Tensor:
        return self.o(attention(*self.qkv(x, context)))


class Block(nn.Module):
    def __init__(self, config: S2VConfig) -> None:
        super().__init__()
        dim, eps = config.dim, config.eps
        self.norm1 = nn.LayerNorm(dim, eps, elementwise_affine=False)
        self.self_attn = Attention(dim, config.num_heads, eps)
        self.norm3 = nn.LayerNorm(dim, eps, elementwise_affine=True)
        self.cross_attn = Attention(dim, config.num_heads, eps)
        self.norm2 = nn.LayerNorm(dim, eps, elementwise_affine=False)
        self.ffn = nn.Sequential(nn.Linear(dim, config.ffn_dim), nn.GELU(approximate="tanh"), nn.Linear(config.ffn_dim, dim))
        self.modulation = nn.Parameter(torch.zeros(1, 6, dim))

    def modulations(self, mod: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """``mod`` [B, L or 1, 6, dim] float32 (the timestep projection) -> the six shift/scale/gate terms."""
        return (self.modulation[None].float() + mod).unbind(2)

    def attention_input(self, x: torch.Tensor, e: tuple[torch.Tensor, ...]) -> torch.Tensor:
        return (self.norm1(x).float() * (1 + e[1]) + e[0]).to(x.dtype)

    def forward(self, x: torch.Tensor, mod: torch.Tensor, context: torch.Tensor, self_attention: SelfAttention) -> torch.Tensor:
        """``self_attention`` maps the modulated input to the attention output (prefill or streaming)."""
        e = self.modulations(mod)
        y = self_attention(self.self_attn, self.attention_input(x, e))
        x = x.float() + y.float() * e[2]
        x = x + self.cross_attn.cross(self.norm3(x.to(torch.bfloat16)).to(context.dtype), context).float()
        y = self.ffn((self.norm2(x) * (1 + e[4]) + e[3]).to(context.dtype))
        return (x + y.float() * e[5]).to(context.dtype)


class Heads:
    """The self-attention heads this process attends with: all of them. A sequence-parallel split (Ulysses) puts in its
    own, whose ``to_heads`` trades this process's tokens of every head for every token of its heads (and back)."""

    share = 1  # the processes the heads are split over

    def local(self, x: torch.Tensor) -> torch.Tensor:
        """This process's heads of [..., heads, d] held whole (the sink, computed by every process)."""
        return x

    def to_heads(self, x: torch.Tensor) -> torch.Tensor:
        """[B, this process's tokens, heads, d] -> [B, every token, this process's heads, d]."""
        return x

    def to_tokens(self, x: torch.Tensor) -> torch.Tensor:
        """The reverse of ``to_heads``."""
        return x


@dataclass
class SelfAttention:
    """What a block's self-attention does in one call: the sink prefill, or a streaming block against a step cache.

    ``rope`` holds the angles of the call's tokens (a sequence-parallel rank's share: its tokens' global positions)."""

    layer: int
    rope: tuple[torch.Tensor, torch.Tensor]
    keep: SinkCache | StepCache
    sink: SinkCache | None = None
    sink_rope: tuple[torch.Tensor, torch.Tensor] | None = None
    heads: Heads = field(default_factory=Heads)

    def __call__(self, attn: Attention, x: torch.Tensor) -> torch.Tensor:
        q, k, v = attn.qkv(x)
        q = apply_rope(q, *self.rope)
        if isinstance(self.keep, SinkCache):  # prefill: store keys un-rotated, attend among the sink tokens
            self.keep.store(self.layer, k, v)
            return attn.o(attention(q, apply_rope(k, *self.rope), v))
        assert self.sink is not None and self.sink_rope is not None
        q, k, v = (self.heads.to_heads(t) for t in (q, apply_rope(k, *self.rope), v))
        keys, values = self.keep.write(self.layer, k, v)
        sink_k = apply_rope(self.sink.keys(self.layer), *self.sink_rope)
        out = attention(q, torch.cat([keys, sink_k], dim=1), torch.cat([values, self.sink.values(self.layer)], dim=1))
        return attn.o(self.heads.to_tokens(out.unflatten(-1, (q.shape[2], -1))).flatten(2))


class Head(nn.Module):
    def __init__(self, config: S2VConfig) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(config.dim, config.eps, elementwise_affine=False)
        self.head = nn.Linear(config.dim, math.prod(config.patch_size) * config.out_dim)
        self.modulation = nn.Parameter(torch.zeros(1, 2, config.dim))

    def forward(self, x: torch.Tensor, emb: torch.Tensor) -> torch.Tensor:
        """``emb`` [B, L, dim] float32: the time embedding (not its projection) of each token's frame."""
        shift, scale = (self.modulation[None].float() + emb[:, :, None]).unbind(2)
        return self.head((self.norm(x).float() * (1 + scale) + shift).to(x.dtype))


class AudioInjector(nn.Module):
    """Cross-attention from each latent frame's tokens to that frame's audio tokens, after an adaptive norm."""

    injector_adain_layers: nn.ModuleList

    def __init__(self, config: S2VConfig, count: int) -> None:
        super().__init__()
        self.injector = nn.ModuleList(Attention(config.dim, config.num_heads, config.eps) for _ in range(count))
        if config.enable_adain:
            self.injector_adain_layers = nn.ModuleList(AdaLayerNorm(output_dim=config.dim * 2, embedding_dim=config.dim, chunk_dim=1) for _ in range(count))

    def forward(self, index: int, x: torch.Tensor, audio: torch.Tensor, audio_global: torch.Tensor | None) -> torch.Tensor:
        """x [B, F * tokens, dim]; audio [B, F, n, dim]; audio_global [B, F, 1, dim] -> x with the audio added."""
        b, frames = audio.shape[:2]
        per_frame = x.unflatten(1, (frames, -1)).flatten(0, 1)
        if audio_global is not None:
            normed = self.injector_adain_layers[index](per_frame, temb=audio_global.flatten(0, 1)[:, 0])
        else:
            normed = F.layer_norm(per_frame, (per_frame.shape[-1],), eps=1e-6)
        attn = self.injector[index]
        assert isinstance(attn, Attention)
        out = attn.cross(normed, audio.flatten(0, 1))
        return x + out.unflatten(0, (b, frames)).flatten(1, 2)


def injected_layers(config: S2VConfig) -> dict[int, int]:
    """Layer -> injector index, matched as the reference does (by name substring: 'transformer_blocks.1' also names 10..19)."""
    found: dict[int, int] = {}
    count = 0
    for layer in range(config.num_layers):
        for inject in config.audio_inject_layers:
            if f"transformer_blocks.{inject}" in f"root.transformer_blocks.{layer}":
                found[inject] = count
                count += 1
    return found


def sinusoid(dim: int, t: torch.Tensor) -> torch.Tensor:
    """Timestep embedding in float64 (as the reference), returned as float32."""
    half = dim // 2
    t = t.to(torch.float64)
    angle = torch.outer(t, torch.pow(10000, -torch.arange(half, dtype=torch.float64, device=t.device) / half))
    return torch.cat([torch.cos(angle), torch.sin(angle)], dim=1).float()


class S2VDiT(nn.Module):
    """The S2V DiT's weights and its two calls: ``prefill_sink`` and ``forward`` (one block)."""

    def __init__(self, config: S2VConfig) -> None:
        super().__init__()
        self.config = config
        dim = config.dim
        self.patch_embedding = nn.Conv3d(config.in_dim, dim, kernel_size=config.patch_size, stride=config.patch_size)
        self.text_embedding = nn.Sequential(nn.Linear(config.text_dim, dim), nn.GELU(approximate="tanh"), nn.Linear(dim, dim))
        self.time_embedding = nn.Sequential(nn.Linear(config.freq_dim, dim), nn.SiLU(), nn.Linear(dim, dim))
        self.time_projection = nn.Sequential(nn.SiLU(), nn.Linear(dim, dim * 6))
        self.blocks = nn.ModuleList(Block(config) for _ in range(config.num_layers))
        self.head = Head(config)
        self.cond_encoder = nn.Conv3d(config.cond_dim, dim, kernel_size=config.patch_size, stride=config.patch_size)
        self.casual_audio_encoder = CausalAudioEncoder(config.audio_dim, config.audio_layers, dim, config.num_audio_token, config.enable_adain)
        self.injected = injected_layers(config)
        self.audio_injector = AudioInjector(config, len(self.injected))
        self.trainable_cond_mask = nn.Embedding(3, dim)
        self.frame_packer = FramePackMotioner(config.in_dim, dim)
        self.motion_frames = MOTION_FRAMES  # video frames of audio history a block's audio is padded to (a pipeline setting)
        self.heads = Heads()  # all of them; a sequence-parallel split gives each rank its share

    @property
    def cache_heads(self) -> int:
        """The heads a KV cache of this process holds (its share under a sequence-parallel split)."""
        return self.config.num_heads // self.heads.share

    @property
    def dtype(self) -> torch.dtype:
        return self.patch_embedding.weight.dtype

    def layers(self) -> list[Block]:
        return [block for block in self.blocks if isinstance(block, Block)]

    def embed_text(self, context: torch.Tensor) -> torch.Tensor:
        """umT5 embeddings [B, L, 4096] -> the cross-attention context [B, 512, dim] (zero-padded first, as the reference)."""
        padded = context.new_zeros(context.shape[0], self.config.text_len, context.shape[2])
        padded[:, : context.shape[1]] = context[:, : self.config.text_len]
        return self.text_embedding(padded.to(self.dtype))

    def _time(self, t: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Timesteps [N] -> embedding [N, dim] and projection [N, 6, dim], float32."""
        emb = self.time_embedding(sinusoid(self.config.freq_dim, t).to(self.dtype)).float()
        return emb, self.time_projection(emb.to(self.dtype)).float().unflatten(1, (6, -1))

    def _rope(self, positions: Positions, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
        return rope_cos_sin(positions, self.config.head_dim, self.config.rope_theta, device)

    @torch.no_grad()
    def prefill_sink(self, ref_latents: torch.Tensor, motion_latents: torch.Tensor, context: torch.Tensor, storage: torch.dtype | None = None) -> SinkCache:
        """The sink's keys/values: reference latent [B, C, 1, h, w] + motion latents [B, C, T, h, w] at timestep 0.

        ``context``: ``embed_text``'s output. The last layer's output is never
        used, so only its keys and values are computed. Every process computes it whole and keeps its heads.
        ``storage``: the dtype the sink is stored in (None: the model's; ``float8_e4m3fn``: fp8 with scales).
        """
        ref = self.patch_embedding(ref_latents.to(self.dtype)).flatten(2).transpose(1, 2)
        motion = self.frame_packer(motion_latents.to(self.dtype))
        x = torch.cat([ref + self.trainable_cond_mask.weight[1], motion + self.trainable_cond_mask.weight[2]], dim=1)
        h, w = ref_latents.shape[3] // 2, ref_latents.shape[4] // 2
        reference, motion_pos = reference_positions(h, w), motion_positions(h, w)
        rope = self._rope(Positions.cat([reference, motion_pos]), x.device)
        _, mod = self._time(torch.zeros(1, device=x.device))
        shape = (self.config.num_layers, x.shape[0], x.shape[1], self.config.num_heads, self.config.head_dim)
        sink = SinkCache.empty(shape, x.dtype, x.device, reference, motion_pos, storage)
        for i, block in enumerate(self.layers()):
            if i == self.config.num_layers - 1:
                _, k, v = block.self_attn.qkv(block.attention_input(x, block.modulations(mod[None])))
                sink.store(i, k, v)
                break
            x = block(x, mod[None], context, SelfAttention(i, rope, sink))
        sink.keep_heads(self.heads.local)
        return sink

    @torch.no_grad()
    def forward(
        self,
        x: torch.Tensor,
        t: torch.Tensor,
        context: torch.Tensor,
        audio: torch.Tensor,
        cache: StepCache,
        sink: SinkCache,
        first_frame: int,
        sink_offset: int,
    ) -> torch.Tensor:
        """Velocity of one block.

        x: [B, C, F, h, w] latents at timestep ``t`` ([F] or [B, F]); context: ``embed_text``'s output;
        audio: wav2vec2 states [B, layers, C_a, 4 F] of the block's video frames; ``first_frame``: the
        block's absolute latent-frame position; ``sink_offset``: how many frames ahead of the stream
        the reference frame is placed (the reference draws 4..30 at random for every call).
        """
        b, _, frames, lat_h, lat_w = x.shape
        h, w = lat_h // 2, lat_w // 2
        assert self.cond_encoder.bias is not None  # no pose input: the pose encoder of zeros is its bias
        tokens = self.patch_embedding(x.to(self.dtype)) + self.cond_encoder.bias.view(1, -1, 1, 1, 1)
        hidden = tokens.flatten(2).transpose(1, 2) + self.trainable_cond_mask.weight[0]
        audio_tokens, audio_global = self._audio_tokens(audio)
        t = t.reshape(-1, frames).expand(b, frames).to(x.device)
        emb, mod = self._time(t.reshape(-1))
        per_token = h * w
        mod = mod.unflatten(0, (b, frames)).repeat_interleave(per_token, dim=1)
        emb = emb.unflatten(0, (b, frames)).repeat_interleave(per_token, dim=1)
        rope = self._rope(block_positions(first_frame, frames, h, w), x.device)
        rollout = max(0, first_frame - (SINK_REF_POSITION - sink_offset))
        sink_rope = self._rope(Positions.cat([sink.reference.shifted(rollout), sink.motion]), x.device)
        for i, block in enumerate(self.layers()):
            hidden = block(hidden, mod, context, SelfAttention(i, rope, cache, sink, sink_rope, self.heads))
            if i in self.injected:
                hidden = self.audio_injector(self.injected[i], hidden, audio_tokens, audio_global)
        cache.advance(frames * per_token)  # every token's keys (a sequence-parallel rank's blocks see only its own tokens)
        out = self.head(hidden, emb)
        return self._unpatchify(out, frames, h, w)

    def _audio_tokens(self, audio: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
        """The block's audio, preceded by copies of its first frame (the motion frames' place), -> tokens per latent frame."""
        padded = torch.cat([audio[..., :1].expand(*audio.shape[:-1], self.motion_frames), audio], dim=-1)
        local, glob = self.casual_audio_encoder(padded.to(self.dtype))
        skip = (self.motion_frames + 3) // 4  # the latent frames of the padding
        return local[:, skip:], None if glob is None else glob[:, skip:]

    def _unpatchify(self, x: torch.Tensor, frames: int, h: int, w: int) -> torch.Tensor:
        pt, ph, pw = self.config.patch_size
        c = self.config.out_dim
        x = x.view(x.shape[0], frames, h, w, pt, ph, pw, c)
        return torch.einsum("bfhwpqrc->bcfphqwr", x).reshape(x.shape[0], c, frames * pt, h * ph, w * pw)
