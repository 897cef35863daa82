"""All networks of one LiveAvatar checkpoint, loaded from a resolved weights layout."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from diffusers.models.autoencoders.autoencoder_kl_wan import AutoencoderKLWan

from avatarstream.components.wan.load_text_encoder import load_text_encoder
from avatarstream.components.wan.load_vae import load_vae
from avatarstream.components.wan.text_encoder import TextEncoder
from avatarstream.families.liveavatar.layout import WeightsLayout
from avatarstream.families.liveavatar.load_audio import AudioEncoder, load_audio_encoder
from avatarstream.families.liveavatar.load_dit import DEFAULT_ALPHA, load_dit
from avatarstream.models.liveavatar.dit import S2VDiT


@dataclass
class LiveAvatarNetworks:
    """The S2V DiT (LoRA applied), the Wan 2.1 VAE, wav2vec2 and (optionally) umT5 of one checkpoint."""

    dit: S2VDiT
    vae: AutoencoderKLWan
    audio_encoder: AudioEncoder
    text_encoder: TextEncoder | None = None

    @classmethod
    def load(
        cls, layout: WeightsLayout, dtype: torch.dtype = torch.float32, *, alpha: float = DEFAULT_ALPHA, merge: bool = True, text: bool = True
    ) -> LiveAvatarNetworks:
        """Every network; ``text=False`` skips umT5 (golden sets give the prompt embedding as a tensor)."""
        return cls(
            dit=load_dit(layout.base, layout.lora, dtype, alpha=alpha, merge=merge),
            vae=load_vae(layout.base, "original", dtype),
            audio_encoder=load_audio_encoder(layout.audio_encoder, dtype),
            text_encoder=load_text_encoder(layout.base, "original", dtype) if text else None,
        )
