"""All networks of one FlashHead variant, loaded from a resolved weights layout."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from transformers import Wav2Vec2FeatureExtractor, Wav2Vec2Model

from avatarstream.components.wan.load_wav2vec2 import read_processor, read_wav2vec2
from avatarstream.families.flashhead.layout import WeightsLayout
from avatarstream.families.flashhead.load_dit import load_dit
from avatarstream.families.flashhead.load_vae import load_video_vae
from avatarstream.models.flashhead.dit import FlashHeadDiT
from avatarstream.models.flashhead.vae import VideoVAE


@dataclass
class FlashHeadNetworks:
    """The variant's DiT and VAE, wav2vec2-base-960h and its processor settings."""

    variant: str
    dit: FlashHeadDiT
    vae: VideoVAE
    audio_encoder: Wav2Vec2Model
    extractor: Wav2Vec2FeatureExtractor

    @classmethod
    def load(cls, layout: WeightsLayout, dtype: torch.dtype = torch.float32) -> FlashHeadNetworks:
        """Every network; wav2vec2 may store its weight norm as ``weight_g``/``weight_v`` or as parametrizations."""
        return cls(
            variant=layout.variant,
            dit=load_dit(layout.model, dtype),
            vae=load_video_vae(layout.variant, layout.vae, dtype),
            audio_encoder=read_wav2vec2(layout.audio_encoder, dtype),
            extractor=read_processor(layout.audio_encoder),
        )
