"""The config JSON of every weights folder a family loads, each through the loader that reads it (to the meta-device
build and the memory check that follow the read, where the loader has them): a damaged or hostile config must end in one
InputError before anything is sized by it."""

from __future__ import annotations

from pathlib import Path

import torch

from avatarstream.components.wan.load_text_encoder import _load_transformers_t5
from avatarstream.components.wan.load_vae import load_vae
from avatarstream.components.wan.load_wav2vec2 import read_processor, read_wav2vec2, wav2vec2_config
from avatarstream.families import demo
from avatarstream.families.infinitetalk import layout as it_layout
from avatarstream.families.infinitetalk.load_dit import load_dit as load_it_dit
from avatarstream.families.infinitetalk.load_dit import read_adapter_config
from avatarstream.families.infinitetalk.load_image_encoder import _load_transformers_clip
from avatarstream.families.liveavatar import layout as la_layout
from avatarstream.families.liveavatar.load_dit import load_dit as load_la_dit
from avatarstream.models.demo import DemoConfig
from fuzz import scenes
from fuzz.contract import Bounds
from fuzz.target import file_target

F32 = torch.float32
CHECKS = "avatarstream.weights.config_values"
BASE = "Wan2.1-I2V-14B-480P"
BASE_DIFFUSERS = BASE + "-Diffusers"
S2V = "Wan2.2-S2V-14B"


def _demo(root: Path) -> None:
    """DemoFamily.load's reading of a folder: the config, then its size on the meta device against the machine."""
    demo._check_fits(root, demo._read_config(root))


def _infinitetalk_dit(root: Path) -> None:
    """InfiniteTalkNetworks.load's DiT: the folder's layout, the adapter's sizes, then the DiT itself."""
    layout = it_layout.resolve(root)
    audio = wav2vec2_config(layout.audio_encoder)
    load_it_dit(layout.base, layout.layout, layout.adapter, read_adapter_config(layout.adapter, audio.num_hidden_layers, audio.hidden_size), F32)


def _liveavatar_dit(root: Path) -> None:
    layout = la_layout.resolve(root)
    load_la_dit(layout.base, layout.lora, F32)


TARGETS = [
    file_target(
        "demo-config",
        scenes.demo,
        "config.json",
        _demo,
        ("avatarstream.families.demo_weights", "avatarstream.families.demo", "avatarstream.models.demo.config", "avatarstream.weights.memory_check"),
        found=({"vae": {**DemoConfig.tiny().to_dict()["vae"], "decoder_channels": -16}},),  # a negative width: torch's RuntimeError
    ),
    file_target(
        "dit-config",
        scenes.infinitetalk_original,
        f"{BASE}/config.json",
        _infinitetalk_dit,
        ("avatarstream.families.infinitetalk.layout", "avatarstream.families.infinitetalk.load_dit", CHECKS),
        found=({"dim": 68},),  # a head 17 wide: diffusers' rotary table asserted
    ),
    file_target(
        "dit-config-diffusers",
        scenes.infinitetalk_diffusers,
        f"{BASE_DIFFUSERS}/transformer/config.json",
        _infinitetalk_dit,
        ("avatarstream.families.infinitetalk.layout", "avatarstream.families.infinitetalk.load_dit", CHECKS),
    ),
    file_target(
        "wav2vec2-config",
        scenes.infinitetalk_original,
        "chinese-wav2vec2-base/config.json",
        lambda root: read_wav2vec2(root / "chinese-wav2vec2-base", F32),
        ("avatarstream.components.wan.load_wav2vec2", CHECKS),
        found=({"activation_dropout": 5.1}, {"feat_extract_norm": "batch"}),  # refused by the network's constructor
    ),
    file_target(
        "vae-config",
        scenes.infinitetalk_diffusers,
        f"{BASE_DIFFUSERS}/vae/config.json",
        lambda root: load_vae(root / BASE_DIFFUSERS, "diffusers", F32),
        ("avatarstream.components.wan.load_vae", CHECKS),
    ),
    file_target(
        "umt5-config",
        scenes.infinitetalk_diffusers,
        f"{BASE_DIFFUSERS}/text_encoder/config.json",
        lambda root: _load_transformers_t5(root / BASE_DIFFUSERS / "text_encoder", F32),
        ("avatarstream.components.wan.load_text_encoder", CHECKS),
        found=({"dtype": "float99"}, {"is_encoder_decoder": 1e-6}, {"dropout_rate": 5.1}, {"dense_act_fn": "gelu_nope"}, {"num_layers": 10**6}),
    ),
    file_target(
        "clip-config",
        scenes.infinitetalk_diffusers,
        f"{BASE_DIFFUSERS}/image_encoder/config.json",
        lambda root: _load_transformers_clip(root / BASE_DIFFUSERS / "image_encoder", F32),
        ("avatarstream.families.infinitetalk.load_image_encoder", "avatarstream.components.wan.load_text_encoder", CHECKS),
        found=({"hidden_act": "gelu_nope"}, {"dtype": "&float16"}),
    ),
    file_target(
        "s2v-config",
        scenes.liveavatar,
        f"{S2V}/config.json",
        _liveavatar_dit,
        ("avatarstream.families.liveavatar.layout", "avatarstream.families.liveavatar.load_dit", "avatarstream.models.liveavatar.config", CHECKS),
        found=({"num_heads": 0}, {"num_layers": 3 * 10**61}, {"ffn_dim": -4}, {"dim": float("inf")}),  # a division by 0, a hang, ...
    ),
    file_target(
        "wav2vec2-processor",
        scenes.liveavatar,
        f"{S2V}/wav2vec2-large-xlsr-53-english/preprocessor_config.json",
        lambda root: read_processor(root / S2V / "wav2vec2-large-xlsr-53-english"),
        ("avatarstream.families.liveavatar.load_audio",),
        bounds=Bounds(seconds=2.0),
    ),
]
