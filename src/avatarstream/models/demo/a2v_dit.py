"""Audio-to-video DiT: predicts the flow-matching velocity of a chunk of base latents.

Per frame the input is concat(noisy latent, conditioning latent, mask), so
motion frames and interpolation anchors can sit at any frame of the chunk;
frames between two anchors carry the anchors' blend as a hint
(`bridge_hint.py`) and predict their residual from it, preconditioned
(`preconditioning.py`). `forward` returns velocity for every frame.
Reference tokens are prepended to the video tokens' keys/values in every
self-attention (own RoPE time index; attended to, not updated), text is a
global cross-attention context, audio is attended frame-locally.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from .blocks import DiTBlock, FinalLayer, TimestepEmbedding
from .bridge_hint import bridge_hint, bridged_frames
from .config import DemoConfig
from .patch import patchify, unpatchify
from .preconditioning import loss_scale, residual_velocity
from .reference_encoder import reference_positions
from .rope import Rope3D, grid_positions


class A2VDiT(nn.Module):
    def __init__(self, cfg: DemoConfig) -> None:
        super().__init__()
        d = cfg.dit
        c = cfg.vae.latent_channels
        self.latent_channels = c
        self.patch_size = d.patch_size
        self.dim = d.dim
        self.bridge_sigma = d.bridge_sigma
        self.reference_time = d.reference_time
        self.num_global_reference = cfg.reference.global_tokens
        self.audio_dim = cfg.audio.dim
        self.text_dim = cfg.text.dim

        self.patch_in = nn.Linear((2 * c + 1) * d.patch_size**2, d.dim)
        self.reference_in = nn.Linear(d.dim, d.dim)
        self.text_in = nn.Sequential(nn.Linear(cfg.text.dim, d.dim), nn.GELU(), nn.Linear(d.dim, d.dim))
        self.audio_in = nn.Sequential(nn.Linear(cfg.audio.dim, d.dim), nn.GELU(), nn.Linear(d.dim, d.dim))
        self.time_embed = TimestepEmbedding(d.freq_dim, d.dim)
        self.rope = Rope3D(d.dim // d.heads, d.rope_theta)
        self.blocks = nn.ModuleList(DiTBlock(d.dim, d.heads, d.mlp_ratio, frame_local=True) for _ in range(d.layers))
        self.head = FinalLayer(d.dim, c * d.patch_size**2)

    def forward(self, x: Tensor, cond: Tensor, mask: Tensor, t: Tensor, audio: Tensor, text: Tensor, reference: Tensor) -> Tensor:
        """x, cond [B, C, T, h, w]; mask [B, T] (1 = conditioned frame); t [B];
        audio [B, T, A, Da]; text [B, N, Dt]; reference [B, R, D] -> velocity [B, C, T, h, w]."""
        self._check(x, cond, mask, t, audio, text, reference)
        b, _, frames, h, w = x.shape
        p = self.patch_size
        hp, wp = h // p, w // p

        mask_channel = mask.to(x.dtype)[:, None, :, None, None].expand(b, 1, frames, h, w)
        hint = bridge_hint(cond, mask)
        video = self.patch_in(patchify(torch.cat([x, hint, mask_channel], dim=1), p))
        memory = self.reference_in(reference)

        positions = torch.cat(
            [reference_positions(self.num_global_reference, hp, wp, self.reference_time, x.device), grid_positions(frames, hp, wp, device=x.device)]
        )
        rope = self.rope(positions)
        emb = self.time_embed(t)
        text_ctx = self.text_in(text)
        audio_ctx = self.audio_in(audio)

        for block in self.blocks:
            video = block(video, emb, rope, text_ctx, memory=memory, frame_context=audio_ctx)
        output = unpatchify(self.head(video, emb), frames, hp, wp, p)
        bridged = bridged_frames(mask)[:, None, :, None, None]
        return torch.where(bridged, residual_velocity(output, x, hint, t, self.bridge_sigma), output)

    def loss_scale(self, mask: Tensor, t: Tensor) -> Tensor:
        """[B, 1, T, 1, 1] weights that put the velocity error of bridged frames on the scale of their output."""
        bridged = bridged_frames(mask)[:, None, :, None, None]
        return torch.where(bridged, loss_scale(t, self.bridge_sigma)[:, None, None, None, None], 1.0)

    def _check(self, x: Tensor, cond: Tensor, mask: Tensor, t: Tensor, audio: Tensor, text: Tensor, reference: Tensor) -> None:
        if x.ndim != 5 or x.shape[1] != self.latent_channels:
            raise ValueError(f"x must be [B, {self.latent_channels}, T, h, w], got {tuple(x.shape)}")
        b, _, frames, h, w = x.shape
        if h % self.patch_size or w % self.patch_size:
            raise ValueError(f"latent size {h}x{w} is not divisible by patch size {self.patch_size}")
        tokens_per_frame = (h // self.patch_size) * (w // self.patch_size)
        expected = {
            "cond": (cond.shape, tuple(x.shape)),
            "mask": (mask.shape, (b, frames)),
            "t": (t.shape, (b,)),
            "audio": (audio.shape[:2] + audio.shape[3:], (b, frames, self.audio_dim)),
            "text": (text.shape[:1] + text.shape[2:], (b, self.text_dim)),
            "reference": (reference.shape, (b, self.num_global_reference + tokens_per_frame, self.dim)),
        }
        for name, (got, want) in expected.items():
            if tuple(got) != tuple(want):
                raise ValueError(f"A2VDiT: {name} has shape {tuple(got)}, expected {want} (audio/text shown without their token axis)")
