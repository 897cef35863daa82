"""A random tiny InfiniteTalk checkpoint, laid out exactly as the real downloads are.

Tests and users render and serve the whole family on a CPU in seconds with it.
The same seed gives the same networks in both layouts: the original one
(``Wan2.1-I2V-14B-480P/`` with Wan key names, sharded, and ``Wan2.1_VAE.pth``)
and the Diffusers one (``Wan2.1-I2V-14B-480P-Diffusers/``, its configs written by
diffusers itself). The parts every Wan-based family shares (VAE, text encoder,
wav2vec2 folder) are written by ``components.wan``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch
from diffusers.models.transformers.transformer_wan import WanTransformer3DModel
from safetensors.torch import save_file
from transformers import Wav2Vec2Config, Wav2Vec2ForPreTraining

from avatarstream.components.wan.config import VAEConfig
from avatarstream.components.wan.layout import RANDOM_MARK, Layout
from avatarstream.components.wan.original_names import dit_to_original
from avatarstream.components.wan.tiny import contiguous, save_wav2vec2, seeded, write_sharded, write_vae
from avatarstream.components.wan.tiny_text_encoder import write_tiny_text_encoder
from avatarstream.families.infinitetalk.layout import ADAPTER_FILE, AUDIO_ENCODER_DIR, BASE_NAMES, DIFFUSERS_SUFFIX, WeightsLayout
from avatarstream.families.infinitetalk.tiny_image_encoder import write_tiny_image_encoder
from avatarstream.models.infinitetalk.config import AdapterConfig, DiTConfig, InfiniteTalkConfig
from avatarstream.models.infinitetalk.dit import InfiniteTalkDiT, is_adapter_key

TINY = InfiniteTalkConfig(
    dit=DiTConfig(dim=64, num_heads=4, num_layers=2, ffn_dim=128, text_dim=32, clip_dim=64),
    adapter=AdapterConfig(blocks=2, channels=32, intermediate_dim=32, output_dim=32, context_tokens=32),
    vae=VAEConfig(base_dim=4),
)
TINY_WAV2VEC2: dict[str, Any] = {
    "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 64,
    "conv_dim": [16] * 7, "num_conv_pos_embeddings": 16, "num_conv_pos_embedding_groups": 4,
    "feat_extract_norm": "group", "do_stable_layer_norm": False, "conv_bias": False, "vocab_size": 32,
    "codevector_dim": 16, "proj_codevector_dim": 16, "num_codevectors_per_group": 8,
    "architectures": ["Wav2Vec2ForPreTraining"],
}  # fmt: skip
#: chinese-wav2vec2-base's preprocessor_config.json (no normalisation: the model was trained on raw samples).
PREPROCESSOR = {"do_normalize": False, "feature_size": 1, "padding_side": "right", "padding_value": 0.0, "return_attention_mask": False, "sampling_rate": 16000}
PIPELINE_INDEX = {
    "_class_name": "WanImageToVideoPipeline",
    "image_encoder": ["transformers", "CLIPVisionModel"],
    "image_processor": ["transformers", "CLIPImageProcessor"],
    "scheduler": ["diffusers", "UniPCMultistepScheduler"],
    "text_encoder": ["transformers", "UMT5EncoderModel"],
    "tokenizer": ["transformers", "T5TokenizerFast"],
    "transformer": ["diffusers", "WanTransformer3DModel"],
    "vae": ["diffusers", "AutoencoderKLWan"],
}


def write_dit(base: Path, adapter_file: Path, layout: Layout, config: InfiniteTalkConfig, seed: int, shards: int) -> None:
    """The DiT's base shards and the adapter file; the adapter's metadata says the weights are random (the loader warns)."""
    dit = seeded(seed, lambda: InfiniteTalkDiT(config.dit, config.adapter))
    state = contiguous(dit.state_dict())
    adapter = {k: v for k, v in state.items() if is_adapter_key(k)}
    base_state = {k: v for k, v in state.items() if k not in adapter}
    adapter_file.parent.mkdir(parents=True, exist_ok=True)
    save_file(adapter, str(adapter_file), metadata={RANDOM_MARK: f"a tiny checkpoint written by scripts/make_tiny_checkpoint.py (seed {seed})"})
    if layout == "original":
        write_sharded(base, "diffusion_pytorch_model", dit_to_original(base_state, config.dit.num_layers), shards)
        (base / "config.json").write_text(json.dumps(config.dit.to_original(), indent=2))
        return
    folder = base / "transformer"
    folder.mkdir(parents=True, exist_ok=True)
    with torch.device("meta"):
        WanTransformer3DModel(**config.dit.diffusers_kwargs()).save_config(folder)  # diffusers writes its own config.json
    write_sharded(folder, "diffusion_pytorch_model", base_state, shards)


def write_wav2vec2(folder: Path, seed: int) -> None:
    """A pre-training checkpoint as chinese-wav2vec2-base ships it (``wav2vec2.`` prefix, ``weight_g``/``weight_v``)."""
    save_wav2vec2(folder, seeded(seed, lambda: Wav2Vec2ForPreTraining(Wav2Vec2Config(**TINY_WAV2VEC2))), PREPROCESSOR)


def write_tiny_checkpoint(out: Path, layout: Layout, *, seed: int = 0, shards: int = 2, config: InfiniteTalkConfig = TINY) -> WeightsLayout:
    """Write every folder of a random checkpoint under ``out`` with its download name; returns where they are."""
    base = out / (BASE_NAMES[0] + (DIFFUSERS_SUFFIX if layout == "diffusers" else ""))
    base.mkdir(parents=True, exist_ok=True)
    adapter = out / ADAPTER_FILE
    write_dit(base, adapter, layout, config, seed, shards)
    write_vae(base, layout, config.vae, seed + 1)
    write_tiny_text_encoder(base, layout, config.dit.text_dim, seed + 2)
    write_tiny_image_encoder(base, layout, config.dit.clip_dim, seed + 3)
    if layout == "diffusers":
        (base / "model_index.json").write_text(json.dumps(PIPELINE_INDEX, indent=2))
    write_wav2vec2(out / AUDIO_ENCODER_DIR, seed + 4)
    return WeightsLayout(base, layout, adapter, out / AUDIO_ENCODER_DIR)
