"""The families avatarstream ships, described without loading their model code.

The registry reads this table to list them (``avatarstream families``), make
their flags and check a weights folder's layout before torch is imported; the
family classes take their ``summary`` and ``weights_help`` from it, so each is
said once. Nothing here may import torch or a family's model code.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from avatarstream.families.base import WeightsCheck

if TYPE_CHECKING:
    from avatarstream.families.demo_options import DemoOptions
    from avatarstream.families.flashhead.options import FlashHeadOptions
    from avatarstream.families.infinitetalk.options import InfiniteTalkOptions
    from avatarstream.families.liveavatar.options import LiveAvatarOptions


@dataclass(frozen=True)
class Builtin:
    family: str  # "module:Class", imported when the family is loaded
    options: str  # "module:Class", in a module that loads no model code
    summary: str  # one line: what it is
    weights_help: str  # one line: which weights it needs (what --weights names)
    check_weights: WeightsCheck | None = None


def _infinitetalk_weights(root: Path | None, options: InfiniteTalkOptions) -> None:
    """The download folders are where ``load`` looks for them (``layout.resolve``: pathlib and json only)."""
    from avatarstream.families.infinitetalk.layout import resolve

    resolve(root, base=options.base, adapter=options.adapter, audio_encoder=options.audio_encoder)


def _demo_weights(root: Path | None, options: DemoOptions) -> None:
    """A named folder holds a config.json of the demo format (``demo_weights``: json only)."""
    from avatarstream.families.demo_weights import check_demo_weights

    check_demo_weights(root, options)


def _liveavatar_weights(root: Path | None, options: LiveAvatarOptions) -> None:
    """The download folders are where ``load`` looks for them (``layout.resolve``: pathlib only)."""
    from avatarstream.families.liveavatar.layout import resolve

    resolve(root, base=options.base, lora=options.lora)


def _flashhead_weights(root: Path | None, options: FlashHeadOptions) -> None:
    """The chosen variant's folders are where ``load`` looks for them (``layout.resolve``: pathlib and json only)."""
    from avatarstream.families.flashhead.layout import resolve

    resolve(root, variant=options.variant, base=options.base, audio_encoder=options.audio_encoder)


BUILTIN: dict[str, Builtin] = {
    "demo": Builtin(
        "avatarstream.families.demo:DemoFamily",
        "avatarstream.families.demo_options:DemoOptions",
        "small models trained on procedural avatars; real time on a CPU, bundled with the package",
        "none (the bundled weights), or a folder written by `make train-demo`: config.json and one .safetensors per module",
        _demo_weights,
    ),
    "demo-tiny": Builtin(
        "avatarstream.families.demo:DemoTinyFamily",
        "avatarstream.families.demo_options:DemoOptions",
        "the demo architecture at its smallest, random weights: grey noise at full speed, for benchmarks and tests",
        "none (random weights drawn from the seed), or a demo weights folder",
        _demo_weights,
    ),
    "infinitetalk": Builtin(
        "avatarstream.families.infinitetalk.family:InfiniteTalkFamily",
        "avatarstream.families.infinitetalk.options:InfiniteTalkOptions",
        "Wan2.1-I2V-14B + the InfiniteTalk audio adapter (and SoulX-FlashTalk's 4-step preset)",
        "the folder holding the downloads: Wan2.1-I2V-14B-480P[-Diffusers]/, InfiniteTalk/, chinese-wav2vec2-base/",
        _infinitetalk_weights,
    ),
    "liveavatar": Builtin(
        "avatarstream.families.liveavatar.family:LiveAvatarFamily",
        "avatarstream.families.liveavatar.options:LiveAvatarOptions",
        "Wan2.2-S2V-14B + the LiveAvatar LoRA: block-causal, 4 steps, per-step KV caches and an attention sink",
        "the folder holding the downloads: Wan2.2-S2V-14B/ and LiveAvatar/liveavatar.safetensors",
        _liveavatar_weights,
    ),
    "flashhead": Builtin(
        "avatarstream.families.flashhead.family:FlashHeadFamily",
        "avatarstream.families.flashhead.options:FlashHeadOptions",
        "SoulX-FlashHead 1.3B (presets pro: Wan 2.1 VAE, lite: LTX-Video VAE): audio DiT, 4 re-noising steps, live on one GPU",
        "the folder holding the downloads: SoulX-FlashHead-1_3B/ (Model_Pro/, VAE_Wan/ or Model_Lite/, VAE_LTX/) and wav2vec2-base-960h/",
        _flashhead_weights,
    ),
}
