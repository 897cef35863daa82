"""The InfiniteTalk DiT: diffusers' Wan2.1-I2V transformer with an audio cross-attention in every block.

Everything but the audio path is diffusers' own (patch embedding, condition
embedder, rotary table, attention, feed-forward, output head); the block
forward is ours because it inserts the audio step between the text/image
cross-attention and the feed-forward, as the architecture does. Parameter
names are diffusers' for the base and the original adapter names
(``audio_proj.*``, ``blocks.N.norm_x``, ``blocks.N.audio_cross_attn.*``).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from diffusers.models.normalization import FP32LayerNorm
from diffusers.models.transformers.transformer_wan import WanTransformer3DModel, WanTransformerBlock
from torch import nn

from avatarstream.models.infinitetalk.audio_attention import AudioCrossAttention
from avatarstream.models.infinitetalk.audio_projection import AudioProjection
from avatarstream.models.infinitetalk.config import AdapterConfig, DiTConfig

#: Parameters kept in float32 under bf16: diffusers' ``_keep_in_fp32_modules`` for Wan (modulation, time
#: embedding) and the adapter's norms, which the reference runs in float32.
FP32_PARAMETERS = ("scale_shift_table", "condition_embedder.time_embedder", "norm_x", "audio_proj.norm")


def is_adapter_key(key: str) -> bool:
    """Whether a parameter belongs to the audio adapter (``infinitetalk.safetensors``) rather than the Wan base."""
    parts = key.split(".")
    return parts[0] == "audio_proj" or (parts[0] == "blocks" and parts[2] in ("norm_x", "audio_cross_attn"))


class InfiniteTalkBlock(WanTransformerBlock):
    """A Wan transformer block plus ``norm_x`` and ``audio_cross_attn``."""

    def __init__(self, dit: DiTConfig, adapter: AdapterConfig) -> None:
        super().__init__(dit.dim, dit.ffn_dim, dit.num_heads, "rms_norm_across_heads", True, dit.eps, dit.dim)
        self.norm_x = FP32LayerNorm(dit.dim, dit.eps, elementwise_affine=True)
        self.audio_cross_attn = AudioCrossAttention(dit.dim, adapter.output_dim, dit.num_heads)

    def forward(  # type: ignore[override]  # Wan's block with the audio tokens as one more input (its weights and names are kept)
        self,
        hidden: torch.Tensor,
        context: torch.Tensor,
        temb: torch.Tensor,
        rotary_emb: tuple[torch.Tensor, torch.Tensor],
        audio_tokens: torch.Tensor,
    ) -> torch.Tensor:
        shift, scale, gate, c_shift, c_scale, c_gate = (self.scale_shift_table + temb.float()).chunk(6, dim=1)
        normed = (self.norm1(hidden.float()) * (1 + scale) + shift).type_as(hidden)
        hidden = (hidden.float() + self.attn1(normed, None, None, rotary_emb) * gate).type_as(hidden)
        hidden = hidden + self.attn2(self.norm2(hidden.float()).type_as(hidden), context, None, None)
        hidden = hidden + self.audio_cross_attn(self.norm_x(hidden.float()).type_as(hidden), audio_tokens)
        normed = (self.norm3(hidden.float()) * (1 + c_scale) + c_shift).type_as(hidden)
        return (hidden.float() + self.ffn(normed).float() * c_gate).type_as(hidden)


class InfiniteTalkDiT(nn.Module):
    """Velocity model: (noisy latent, conditioning, timestep, text, CLIP image, audio windows) -> velocity."""

    def __init__(self, dit: DiTConfig, adapter: AdapterConfig) -> None:
        super().__init__()
        self.config = dit
        base = WanTransformer3DModel(**{**dit.diffusers_kwargs(), "num_layers": 0})
        self.rope = base.rope
        self.patch_embedding = base.patch_embedding
        self.condition_embedder = base.condition_embedder
        self.blocks = nn.ModuleList(InfiniteTalkBlock(dit, adapter) for _ in range(dit.num_layers))
        self.norm_out = base.norm_out
        self.proj_out = base.proj_out
        self.scale_shift_table = base.scale_shift_table
        self.audio_proj = AudioProjection(adapter)

    def forward(
        self,
        x: torch.Tensor,
        y: torch.Tensor,
        timestep: torch.Tensor,
        context: torch.Tensor,
        clip_fea: torch.Tensor,
        audio: torch.Tensor,
    ) -> torch.Tensor:
        """x [B,16,T,H,W], y [B,20,T,H,W], timestep [B] in [0, 1000], context [B,L<=512,text_dim],
        clip_fea [B,257,clip_dim], audio [B,1+4(T-1),5,blocks,channels] -> velocity [B,16,T,H,W]."""
        latent = torch.cat([x, y], dim=1)
        batch, _, frames, height, width = latent.shape
        p_t, p_h, p_w = self.config.patch_size
        rotary_emb = self.rope(latent)
        hidden = self.patch_embedding(latent).flatten(2).transpose(1, 2)
        context = F.pad(context, (0, 0, 0, self.config.text_len - context.shape[1]))
        temb, timestep_proj, text, image = self.condition_embedder(timestep, context, clip_fea)
        timestep_proj = timestep_proj.unflatten(1, (6, -1))
        context = torch.cat([image, text], dim=1)
        audio_tokens = self.audio_proj(audio.to(hidden.dtype))
        for block in self.blocks:
            hidden = block(hidden, context, timestep_proj, rotary_emb, audio_tokens)
        shift, scale = (self.scale_shift_table + temb.unsqueeze(1)).chunk(2, dim=1)
        hidden = (self.norm_out(hidden.float()) * (1 + scale) + shift).type_as(hidden)
        out = self.proj_out(hidden)
        out = out.reshape(batch, frames // p_t, height // p_h, width // p_w, p_t, p_h, p_w, -1)
        return out.permute(0, 7, 1, 4, 2, 5, 3, 6).flatten(6, 7).flatten(4, 5).flatten(2, 3)
