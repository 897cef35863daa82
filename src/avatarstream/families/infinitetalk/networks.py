"""All networks of one InfiniteTalk checkpoint, loaded from a resolved weights layout."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch
from diffusers.models.autoencoders.autoencoder_kl_wan import AutoencoderKLWan
from transformers import Wav2Vec2Model

from avatarstream.components.wan.load_text_encoder import load_quantized_text_encoder, load_text_encoder
from avatarstream.components.wan.load_vae import load_vae
from avatarstream.components.wan.load_wav2vec2 import read_wav2vec2, wav2vec2_config
from avatarstream.components.wan.text_encoder import TextEncoder
from avatarstream.families.infinitetalk.layout import WeightsLayout
from avatarstream.families.infinitetalk.load_dit import load_dit, read_adapter_config
from avatarstream.families.infinitetalk.load_image_encoder import load_image_encoder
from avatarstream.families.infinitetalk.load_quantized_dit import load_quantized_dit, read_quantized_adapter_config
from avatarstream.families.infinitetalk.published import Published, text_encoder_map
from avatarstream.models.infinitetalk.audio_features import resample_to_video_rate
from avatarstream.models.infinitetalk.dit import InfiniteTalkDiT
from avatarstream.models.infinitetalk.image_encoder import ImageEncoder


@dataclass
class InfiniteTalkNetworks:
    """The DiT (with its adapter), the VAE and the audio encoder of one checkpoint."""

    dit: InfiniteTalkDiT
    vae: AutoencoderKLWan
    audio_encoder: Wav2Vec2Model
    text_encoder: TextEncoder | None = None
    image_encoder: ImageEncoder | None = None

    @classmethod
    def load(
        cls, layout: WeightsLayout, dtype: torch.dtype = torch.float32, *, encoders: bool = True, published: Published | None = None
    ) -> InfiniteTalkNetworks:
        """Every network; ``encoders=False`` skips UMT5 and CLIP (golden sets give their outputs as tensors);
        ``published``: the DiT (and UMT5) from the publisher's quantized files instead of the base's and the adapter.

        The VAE and wav2vec2 stay in float32 whatever ``dtype`` is, as the reference keeps them: they are small
        (under 1 GB together) and in bf16 their outputs drift from the reference's by more than anything else.
        """
        audio_config = wav2vec2_config(layout.audio_encoder)
        blocks, channels = audio_config.num_hidden_layers, audio_config.hidden_size
        if published is None:
            dit = load_dit(layout.base, layout.layout, layout.adapter, read_adapter_config(layout.adapter, blocks, channels), dtype)
        else:
            adapter = read_quantized_adapter_config(published.dit, blocks, channels)
            dit = load_quantized_dit(layout.base, layout.layout, published.dit, adapter, dtype, published.device)
        return cls(
            dit=dit,
            vae=load_vae(layout.base, layout.layout, torch.float32),
            audio_encoder=load_wav2vec2(layout.audio_encoder, torch.float32),
            text_encoder=_text_encoder(layout, dtype, published) if encoders else None,
            image_encoder=load_image_encoder(layout.base, layout.layout, dtype) if encoders else None,
        )


def load_wav2vec2(folder: Path, dtype: torch.dtype) -> Wav2Vec2Model:
    """chinese-wav2vec2-base, made to resample its CNN features to the video rate (as InfiniteTalk was trained)."""
    network = read_wav2vec2(folder, dtype)
    resample_to_video_rate(network)
    return network


def _text_encoder(layout: WeightsLayout, dtype: torch.dtype, published: Published | None) -> TextEncoder:
    if published is None or published.text_encoder is None:
        return load_text_encoder(layout.base, layout.layout, dtype)
    path = published.text_encoder
    return load_quantized_text_encoder(layout.base, layout.layout, path, text_encoder_map(path), dtype, published.device)
