"""All networks of one InfiniteTalk checkpoint, loaded from a resolved weights layout."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from diffusers.models.autoencoders.autoencoder_kl_wan import AutoencoderKLWan
from transformers import Wav2Vec2Model

from avatarstream.families.infinitetalk.layout import WeightsLayout
from avatarstream.families.infinitetalk.load_audio import load_wav2vec2, wav2vec2_config
from avatarstream.families.infinitetalk.load_dit import load_dit, read_adapter_config
from avatarstream.families.infinitetalk.load_vae import load_vae
from avatarstream.models.infinitetalk.dit import InfiniteTalkDiT


@dataclass
class InfiniteTalkNetworks:
    """The DiT (with its adapter), the VAE and the audio encoder of one checkpoint."""

    dit: InfiniteTalkDiT
    vae: AutoencoderKLWan
    audio_encoder: Wav2Vec2Model

    @classmethod
    def load(cls, layout: WeightsLayout, dtype: torch.dtype = torch.float32) -> InfiniteTalkNetworks:
        audio_config = wav2vec2_config(layout.audio_encoder)
        adapter = read_adapter_config(layout.adapter, audio_config.num_hidden_layers, audio_config.hidden_size)
        return cls(
            dit=load_dit(layout.base, layout.layout, layout.adapter, adapter, dtype),
            vae=load_vae(layout.base, layout.layout, dtype),
            audio_encoder=load_wav2vec2(layout.audio_encoder, dtype),
        )
